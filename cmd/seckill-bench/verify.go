package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runVerify checks the invariants of one existing sale: after a run of your own client, or to
// re-check a sale seckill-bench drove (it writes accepted-<sale>.json next to its report).
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sale := fs.String("sale", "", "sale id (required)")
	accepted := fs.String("accepted", "", "JSON file of the 202s: [{\"order_id\",\"user_id\",\"at\"}]")
	demand := fs.Int("demand", 0, "distinct users who asked to buy (demand above stock requires a sell-out)")
	pgURL := fs.String("pg", stackenv.PGURL(), "Postgres URL of the backend's database")
	redisAddr := fs.String("redis", stackenv.RedisAddr(), "Redis host:port")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	vhost := fs.String("vhost", "/", "RabbitMQ vhost of the topology")
	orders := fs.String("orders", "", "order API base URL (the gateway) to check failed orders' reasons as their buyer sees them")
	noRedis := fs.Bool("no-redis", false, "skip the Redis half of invariant 4 (database-only baselines)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *sale == "" {
		return errorf(stderr, "verify: -sale is required")
	}
	var acc []invariants.Accepted
	if *accepted != "" {
		b, err := os.ReadFile(*accepted)
		if err != nil {
			return errorf(stderr, "verify: %v", err)
		}
		if err := json.Unmarshal(b, &acc); err != nil {
			return errorf(stderr, "verify: %s: %v", *accepted, err)
		}
	}
	pg, err := pgxpool.New(ctx, *pgURL)
	if err != nil {
		return errorf(stderr, "verify: postgres: %v", err)
	}
	defer pg.Close()
	rdb := redis.NewClient(&redis.Options{Addr: *redisAddr})
	defer rdb.Close()
	src := invariants.Sources{Redis: rdb, PG: pg, Dead: invariants.RabbitMgmt{URL: *mgmt, Vhost: *vhost}}
	if *orders != "" {
		src.Orders = invariants.HTTPOrders(*orders, nil)
	}
	rep, err := invariants.Verify(ctx, src, invariants.Run{Sale: *sale, Accepted: acc, Demand: *demand, CheckRedis: !*noRedis})
	if err != nil {
		return errorf(stderr, "verify: %v", err)
	}
	fmt.Fprint(stdout, rep.String())
	if !rep.OK() {
		fmt.Fprintln(stdout, "FAIL")
		return 1
	}
	fmt.Fprintln(stdout, "every invariant PASSes")
	return 0
}
