package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/bench/scenario/soak"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runSoak keeps a private stack busy at a steady rate, sale after sale, and judges whether the
// gateway's and the backend's memory and goroutines stayed flat (issue: soak run, not in CI).
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", 10*time.Minute, "how long to keep starting sales")
	interval := fs.Duration("interval", 10*time.Second, "how often to sample memory and goroutines")
	rate := fs.Float64("rate", 3300, "arrival rate of purchases (and of token requests), per second: keep it below what the full edge sustains (BENCHMARKS.md, The whole sale)")
	users := fs.Int("users", 30000, "distinct users per sale")
	stock := fs.Int("stock", 10000, "units per sale")
	openConns := fs.Int("open-conns", 2000, "most requests in flight")
	out := fs.String("out", "bench-results/soak", "directory for soak.json and soak.md")
	root := fs.String("root", ".", "repository root")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	redisAddr := fs.String("redis", stackenv.RedisAddr(), "Redis host:port (unused: the soak starts its own)")
	amqpURL := fs.String("amqp", stackenv.AMQPURL(), "RabbitMQ URL (a vhost of its own is created)")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	pgAdmin := fs.String("pg-admin", stackenv.PGAdminURL(), "Postgres maintenance URL")
	adminToken := fs.String("admin-token", stackenv.Secret("SECKILL_ADMIN_TOKEN"), "backend admin token (default SECKILL_ADMIN_TOKEN, else a random one for the stack this run starts)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "[soak] "+format+"\n", a...) }
	logDir := filepath.Join(*out, "logs")
	stack, err := driver.Start(ctx, driver.StartOptions{Root: *root, BinDir: *bin, RedisAddr: *redisAddr, PrivateRedis: true,
		AMQPURL: *amqpURL, MgmtURL: *mgmt, PGAdminURL: *pgAdmin, AdminToken: *adminToken,
		TokenKey: stackenv.Secret("SECKILL_TOKEN_KEY"), LogDir: logDir,
		ExtraGlobal: harness.TrustLoopbackProxy})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer stack.Close()
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer drv.Close()

	people := crowd.DefaultCrowd()
	people.Users = *users
	round := crowd.Options{Crowd: people, Stock: *stock, Model: load.Model{Rate: *rate, Connections: *openConns},
		TokenRate: *rate, TokenConns: *openConns, DrainTimeout: time.Minute, Label: fmt.Sprintf("soak %.0f/s", *rate)}
	logf("gateway %s (pid %d), backend %s (pid %d); %s at %.0f requests/s, %d users and %d units per sale",
		stack.Gateway, stack.GatewayPID, stack.Backend, stack.BackendPID, *duration, *rate, *users, *stock)
	res, err := soak.Soak(ctx, drv, soak.SoakOptions{Duration: *duration, Interval: *interval, Round: round, Logf: logf})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "Command: `seckill-bench soak %s`\nMachine: %d CPUs; date %s\n\n", strings.Join(args, " "),
		driver.ThisMachine().CPUs, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	soak.SoakMarkdown(&md, res)
	fmt.Fprint(stdout, md.String())
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errorf(stderr, "%v", err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "soak.json"), b, 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "soak.md"), []byte(md.String()), 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if !res.OK() {
		fmt.Fprintln(stdout, "\nsoak: FAIL")
		return 1
	}
	fmt.Fprintln(stdout, "\nsoak: PASS")
	return 0
}
