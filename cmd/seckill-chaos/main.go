// Command seckill-chaos runs a flash sale through two gateways and two consumers of a private
// deployment (its own Redis, RabbitMQ and Postgres servers) while a schedule kills and
// restarts every part: a gateway (kill -9), RabbitMQ, Postgres, a consumer (kill -9), Redis.
// Then it drains, checks the five invariants of DESIGN.md and what buyers must see during each
// fault, and prints a table. Exit code 0 when every row passed, 1 on any FAIL, 2 when the run
// could not be carried out. `make chaos` runs it; see docs/chaos.md.
//
//	seckill-chaos                              the default schedule (about 2 minutes)
//	seckill-chaos -redis-crash                 Redis is killed (kill -9) instead of stopped
//	seckill-chaos -variants 2475,2475,2475,2475  a size drop: four variants, a limit of 1
//	seckill-chaos -schedule 'redis-kill@10s+3s,gateway-kill@20s+2s#2'
//	seckill-chaos -only-waitlist               the waitlist row alone (a room sale whose unpaid units go to the next waiters)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seckilledge/seckill/bench/scenario/chaos"
	"github.com/seckilledge/seckill/internal/stackenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	buyers := fs.Int("buyers", 11000, "buyers (each fetches a token and buys once, retrying on errors and 503)")
	rate := fs.Float64("rate", 200, "buyer arrivals per second")
	stock := fs.Int("stock", 9900, "units on sale (fewer than the buyers: the sale sells out partway)")
	variants := fs.String("variants", "", "stocks of a sale with variants and a limit of 1, e.g. 450,450,450,450 (replaces -stock; buyer i asks for variant i mod n)")
	limit := fs.Int("limit", 1, "per-user limit of the -variants sale; above 1 buyers ask for 1..limit units")
	schedule := fs.String("schedule", "", "faults as kind@at+down[#instance],… (default: one of each; see docs/chaos.md)")
	redisCrash := fs.Bool("redis-crash", false, "kill -9 Redis instead of stopping it (measures what AOF everysec loses)")
	short := fs.Bool("short", false, "the short form of make test: 2000 buyers at 125/s, faults packed into 16 s")
	catchUp := fs.Duration("catch-up", 60*time.Second, "how long after a recovery the orders around the fault may take to reach Postgres")
	root := fs.String("root", ".", "repository root (Caddyfile; sources when -bin is empty)")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	caddyfile := fs.String("caddyfile", "", "gateway Caddyfile template (default: <root>/Caddyfile)")
	relay := fs.String("gate-relay", "", "relay settings added to seckill_gate, e.g. 'claim_min_idle 5s' (default: the Caddyfile's)")
	dir := fs.String("dir", "", "where the private servers keep data and every process logs (default: a temp dir, removed after a PASS)")
	out := fs.String("out", "", "also write the report as JSON here")
	drawEntrants := fs.Int("draw-entrants", 600, "entrants of the draw row (a draw sale entered while a gateway is killed and Redis restarted; 0: no draw row)")
	waitlistWaiters := fs.Int("waitlist-waiters", 60, "waiters of the waitlist row (a room sale with the waitlist, a third as many units whose first buyers never pay, while a gateway and a backend are killed and Redis restarted; 0: no waitlist row)")
	onlyWaitlist := fs.Bool("only-waitlist", false, "run the waitlist row alone (no purchase sale, no draw row)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o := chaos.Options{Buyers: *buyers, Rate: *rate, Stock: *stock, CatchUp: *catchUp, Log: stderr, Schedule: chaos.DefaultSchedule(), DrawEntrants: *drawEntrants,
		WaitlistWaiters: *waitlistWaiters, OnlyWaitlist: *onlyWaitlist,
		Cluster: chaos.ClusterOptions{Root: *root, BinDir: *bin, Caddyfile: *caddyfile, GateRelay: *relay, Dir: *dir,
			AdminToken: stackenv.Secret("SECKILL_ADMIN_TOKEN"), TokenKey: stackenv.Secret("SECKILL_TOKEN_KEY")}}
	if *short {
		o.Buyers, o.Rate, o.Stock, o.Schedule = 2000, 125, 1800, chaos.ShortSchedule()
	}
	if *variants != "" {
		for _, f := range strings.Split(*variants, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "seckill-chaos: -variants: %q is not a stock\n", f)
				return 2
			}
			o.Variants = append(o.Variants, n)
		}
	}
	o.Limit = *limit
	if *schedule != "" {
		s, err := chaos.ParseSchedule(*schedule)
		if err != nil {
			fmt.Fprintf(stderr, "seckill-chaos: %v\n", err)
			return 2
		}
		o.Schedule = s
	}
	if *redisCrash {
		for i := range o.Schedule {
			if o.Schedule[i].Kind == chaos.RedisStop {
				o.Schedule[i].Kind = chaos.RedisKill
			}
		}
	}
	tmp := o.Cluster.Dir == ""
	if tmp {
		d, err := os.MkdirTemp("", "seckill-chaos-")
		if err != nil {
			fmt.Fprintf(stderr, "seckill-chaos: %v\n", err)
			return 2
		}
		o.Cluster.Dir = d
	}
	if abs, err := filepath.Abs(o.Cluster.Dir); err == nil {
		o.Cluster.Dir = abs
	}
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "seckill-chaos: %v (logs in %s)\n", err, o.Cluster.Dir)
		return 2
	}
	fmt.Fprintln(stdout)
	rep.Table(stdout)
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			fmt.Fprintf(stderr, "seckill-chaos: %v\n", err)
		}
	}
	if !rep.OK() {
		return 1
	}
	if tmp {
		_ = os.RemoveAll(o.Cluster.Dir)
	}
	return 0
}
