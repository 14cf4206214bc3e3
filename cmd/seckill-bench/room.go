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

	"github.com/seckilledge/seckill/bench"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runRoom is `seckill-bench room`: the waiting room's fairness scenario (a fast and a slow
// population, a sale without the room and one with it, side by side, -runs times, every
// invariant checked) and its poll benchmark (the room's poll against Caddy's respond), on a
// private stack whose gateway is bench/fairness.Caddyfile (docs/room.md, BENCHMARKS.md).
func runRoom(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench room", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "fairness,poll", "what to run: fairness, poll")
	runs := fs.Int("runs", 3, "fairness runs (the table reports each and the medians)")
	var fo bench.FairnessOptions
	fs.IntVar(&fo.Buyers, "buyers", 500, "buyers per population")
	fs.Float64Var(&fo.RoomRate, "room-rate", 5, "the room's admissions per second in the fairness sale")
	fs.Float64Var(&fo.StockShare, "stock-share", 0.1, "stock as a share of all buyers")
	var po bench.PollOptions
	fs.IntVar(&po.Users, "poll-users", 2000, "waiters polling in the poll benchmark")
	fs.IntVar(&po.Conns, "poll-conns", 200, "connections of the poll benchmark")
	fs.DurationVar(&po.Duration, "poll-duration", 5*time.Second, "each side of each poll round")
	fs.IntVar(&po.Rounds, "poll-rounds", 3, "poll rounds (room, then respond)")
	out := fs.String("out", "bench-results/room", "directory for room.json and room.md")
	root := fs.String("root", ".", "repository root")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	caddyfile := fs.String("caddyfile", "", "gateway Caddyfile (default <root>/bench/fairness.Caddyfile)")
	amqpURL := fs.String("amqp", stackenv.AMQPURL(), "RabbitMQ URL (a vhost of its own is created)")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	pgAdmin := fs.String("pg-admin", stackenv.PGAdminURL(), "Postgres maintenance URL")
	adminToken := fs.String("admin-token", stackenv.Secret("SECKILL_ADMIN_TOKEN"), "backend admin token (default SECKILL_ADMIN_TOKEN, else a random one for the stack this run starts)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *caddyfile == "" {
		*caddyfile = filepath.Join(*root, "bench", "fairness.Caddyfile")
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "[room] "+format+"\n", a...) }
	fo.Logf, po.Logf = logf, logf
	stack, err := bench.Start(ctx, bench.StartOptions{Root: *root, BinDir: *bin, Caddyfile: *caddyfile, PrivateRedis: true,
		AMQPURL: *amqpURL, MgmtURL: *mgmt, PGAdminURL: *pgAdmin, AdminToken: *adminToken,
		TokenKey: stackenv.Secret("SECKILL_TOKEN_KEY"), LogDir: filepath.Join(*out, "logs")})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer stack.Close()
	drv, err := bench.NewDriver(ctx, stack)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer drv.Close()

	var md strings.Builder
	m := bench.ThisMachine()
	fmt.Fprintf(&md, "Command: `seckill-bench room %s`\nMachine: %d CPUs, %d MiB, %s, %s; date %s\n",
		strings.Join(args, " "), m.CPUs, m.MemMiB, m.CPU, m.Go, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	result := map[string]any{}
	ok := true
	if strings.Contains(*only, "fairness") {
		var all []*bench.FairnessResult
		for i := range *runs {
			fo.Seed = uint64(i + 1)
			r, err := drv.Fairness(ctx, fo)
			if err != nil {
				return errorf(stderr, "fairness run %d: %v", i+1, err)
			}
			for _, s := range []*bench.FairnessSale{r.Without, r.With} {
				if !s.Verify.OK() {
					ok = false
					fmt.Fprintf(stdout, "%s\n", s.Verify.String())
				}
			}
			all = append(all, r)
		}
		fairnessMarkdown(&md, all)
		result["fairness"] = all
	}
	if strings.Contains(*only, "poll") {
		r, err := drv.RoomPoll(ctx, po)
		if err != nil {
			return errorf(stderr, "poll: %v", err)
		}
		pollMarkdown(&md, r)
		result["poll"] = r
	}
	fmt.Fprint(stdout, md.String())
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errorf(stderr, "%v", err)
	}
	b, _ := json.MarshalIndent(result, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "room.json"), b, 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "room.md"), []byte(md.String()), 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if !ok {
		fmt.Fprintln(stdout, "\nroom: invariants FAIL")
		return 1
	}
	return 0
}

func fairnessMarkdown(w io.Writer, runs []*bench.FairnessResult) {
	if len(runs) == 0 {
		return
	}
	o := runs[0]
	fmt.Fprintf(w, "\nFairness: %d fast and %d slow buyers, %d units, room rate %g/s; invariants checked on every sale.\n\n",
		o.Buyers, o.Buyers, o.With.Stock, o.RoomRate)
	fmt.Fprintln(w, "| run | sale | fast won | slow won | fast share | slow share | slow/fast | admitted fast / slow | sold out after | requests fast / slow | invariants |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	med := map[bool][]float64{}
	for i, r := range runs {
		for _, s := range []*bench.FairnessSale{r.Without, r.With} {
			verdict := "PASS"
			if !s.Verify.OK() {
				verdict = "FAIL"
			}
			adm := "-"
			if s.Room {
				adm = fmt.Sprintf("%d / %d", s.Fast.Admitted, s.Slow.Admitted)
			}
			fmt.Fprintf(w, "| %d | %s | %d | %d | %.0f %% | %.0f %% | %.2f | %s | %.1f s | %d / %d | %d %s |\n", i+1, s.Name, s.Fast.Won, s.Slow.Won,
				100*s.Fast.Share, 100*s.Slow.Share, s.Ratio, adm, s.SoldOutS, s.Fast.Requests, s.Slow.Requests, len(s.Verify.Checks), verdict)
			med[s.Room] = append(med[s.Room], s.Ratio)
		}
	}
	fmt.Fprintf(w, "\nMedian slow/fast win-rate ratio: without the room %.2f, with the room %.2f (target >= 0.9).\n",
		bench.Median(med[false]), bench.Median(med[true]))
	// Pooled over the runs: the permutation is a lottery, and one run's 100 units leave a
	// binomial spread of about +-0.2 on the ratio; the pooled figure spreads less.
	var won [2][2]int // [room][fast]
	pre := 0
	for _, r := range runs {
		won[0][0], won[0][1] = won[0][0]+r.Without.Slow.Won, won[0][1]+r.Without.Fast.Won
		won[1][0], won[1][1] = won[1][0]+r.With.Slow.Won, won[1][1]+r.With.Fast.Won
		pre += r.With.Prequeued
	}
	pooled := func(i int) float64 {
		if won[i][1] == 0 {
			return 0
		}
		return float64(won[i][0]) / float64(won[i][1])
	}
	fmt.Fprintf(w, "Pooled over %d runs: without the room slow %d / fast %d units (%.2f), with the room slow %d / fast %d (%.2f); %d of %d room entries were in the pre-queue.\n",
		len(runs), won[0][0], won[0][1], pooled(0), won[1][0], won[1][1], pooled(1), pre, len(runs)*2*o.Buyers)
}

func pollMarkdown(w io.Writer, r *bench.PollResult) {
	fmt.Fprintf(w, "\nPoll: %d waiters with tickets, %d connections, %d rounds (room then respond); medians.\n\n", r.Users, r.Conns, len(r.Rounds))
	fmt.Fprintln(w, "| round | room polls/s | respond req/s | ratio | room p99 | gateway µs/poll | redis µs/poll | respond gateway µs/req | scripts/poll | Redis commands/poll |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for i, rd := range r.Rounds {
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f | %.1f ms | %.0f | %.0f | %.0f | %.3f | %.1f |\n", i+1, rd.Room.Throughput, rd.Respond.Throughput, rd.Ratio,
			rd.Room.P99ms, rd.Room.CPU["gateway"], rd.Room.CPU["redis"], rd.Respond.CPU["gateway"], rd.ScriptsPerPoll, rd.RedisCommandsPerPoll)
	}
	fmt.Fprintf(w, "| median | %.0f | %.0f | %.2f | | %.0f | %.0f | %.0f | %.3f | %.1f |\n", r.RoomThroughput, r.RespondThroughput, r.Ratio,
		r.RoomGatewayUs, r.RoomRedisUs, r.RespondGatewayUs, r.ScriptsPerPoll, r.RedisPerPoll)
	fmt.Fprintf(w, "\n%d of %d polls answered `waiting`.\n", r.Waiting, r.Polls)
}
