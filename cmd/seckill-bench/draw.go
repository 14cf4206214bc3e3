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
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/bench/scenario/draw"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runDraw is `seckill-bench draw` (make bench-draw; docs/draw.md, "Measured"): the entry cost
// against a room entry side by side, the draw of a million entries, and the fairness runs
// through two gateways. It starts its own gateways, backend and services.
func runDraw(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "cost,big,fair", "what to run: cost (entry cost), big (the million-entry draw), fair (fast against slow)")
	var o draw.DrawOptions
	fs.IntVar(&o.Entries, "entries", 1_000_000, "entries of the big draw")
	fs.IntVar(&o.Variants, "variants", 8, "sizes")
	fs.IntVar(&o.Stock, "stock", 500, "units per size in the big draw")
	fs.IntVar(&o.Rounds, "rounds", 3, "entry-cost rounds (draw, then room)")
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "each side of each entry-cost round")
	fs.IntVar(&o.Conns, "conns", 100, "connections of the entry-cost rounds")
	var fo draw.DrawFairOptions
	fs.IntVar(&fo.Entrants, "entrants", 100_000, "entrants of each fairness run")
	fs.IntVar(&fo.Stock, "fair-stock", 1000, "units per size in the fairness runs")
	runs := fs.Int("runs", 5, "fairness runs")
	pf := addPinFlags(fs)
	out := fs.String("out", "bench-results/draw", "directory for draw.json and draw.md")
	root := fs.String("root", ".", "repository root")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	caddyfile := fs.String("caddyfile", "", "gateway Caddyfile (default <root>/bench/draw.Caddyfile)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *caddyfile == "" {
		*caddyfile = filepath.Join(*root, "bench", "draw.Caddyfile")
	}
	fo.Variants = o.Variants
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "[draw] "+format+"\n", a...) }
	o.Logf, fo.Logf = logf, logf
	gateways := 1
	if strings.Contains(*only, "fair") {
		gateways = 2
	}
	if err := pf.beforeStack(); err != nil {
		return errorf(stderr, "%v", err)
	}
	stack, err := driver.Start(ctx, driver.StartOptions{Root: *root, BinDir: *bin, Caddyfile: *caddyfile, PrivateRedis: true,
		PrivateServices: *pf.private, AMQPURL: stackenv.AMQPURL(), MgmtURL: stackenv.AMQPMgmtURL(), PGAdminURL: stackenv.PGAdminURL(), Gateways: gateways, AdminToken: stackenv.Secret("SECKILL_ADMIN_TOKEN"),
		TokenKey: stackenv.Secret("SECKILL_TOKEN_KEY"), LogDir: filepath.Join(*out, "logs")})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer stack.Close()
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer drv.Close()
	var pinned crowd.Result
	unpin, err := pf.start(stack, &pinned, logf)
	if err != nil {
		return errorf(stderr, "%v", err)
	}

	var md strings.Builder
	m := driver.ThisMachine()
	fmt.Fprintf(&md, "Command: `seckill-bench draw %s`\nMachine: %d CPUs, %d MiB, %s, %s; date %s; load average %s\n\n",
		strings.Join(args, " "), m.CPUs, m.MemMiB, m.CPU, m.Go, time.Now().UTC().Format("2006-01-02 15:04 MST"), driver.LoadAvg())
	result := map[string]any{}
	ok := true
	r := &draw.DrawResult{}
	if strings.Contains(*only, "cost") {
		if err := draw.EntryCost(ctx, drv, o, r); err != nil {
			return errorf(stderr, "entry cost: %v", err)
		}
		fmt.Fprintf(&md, "| entry cost round | draw entries/s | draw µs (gateway+Redis) | room entries/s | room µs | draw/room |\n|---|---|---|---|---|---|\n")
		for i, er := range r.Rounds {
			fmt.Fprintf(&md, "| %d | %.0f | %.0f | %.0f | %.0f | %.2fx |\n", i+1, er.Draw.Throughput,
				er.Draw.CPU["gateway"]+er.Draw.CPU["redis"], er.Room.Throughput, er.Room.CPU["gateway"]+er.Room.CPU["redis"], er.Ratio)
		}
		fmt.Fprintf(&md, "| **median** | | %.0f | | %.0f | **%.2fx** (target <= 1.2x) |\n\n", r.DrawUs, r.RoomUs, r.EntryRatio)
	}
	if strings.Contains(*only, "big") {
		if err := draw.BigDraw(ctx, drv, o, r); err != nil {
			return errorf(stderr, "big draw: %v", err)
		}
		fmt.Fprintf(&md, "| million-entry draw | measured | target |\n|---|---|---|\n")
		fmt.Fprintf(&md, "| entries, sizes | %d, %d | 1 000 000, 8 |\n", r.Entries, o.Variants)
		fmt.Fprintf(&md, "| Redis memory per entry | %.0f B | <= 150 B |\n", r.BytesPerEntry)
		fmt.Fprintf(&md, "| the draw (close, tree, Postgres, ranks, positions, wave 1, reveal) | %.1f s | < 60 s |\n", r.DrawSeconds)
		fmt.Fprintf(&md, "| Redis calls over 10 ms during the draw | %d (longest %.1f ms) | none over 50 ms |\n", len(r.SlowCalls), r.MaxCallMs)
		fmt.Fprintf(&md, "| proof p50 / p99 | %.1f / %.1f ms | an indexed read |\n", r.ProofP50, r.ProofP99)
		fmt.Fprintf(&md, "| page of 1000 entries p50 / p99 | %.1f / %.1f ms | an indexed read |\n\n", r.PageP50, r.PageP99)
		if r.DrawSeconds >= 60 || r.MaxCallMs > 50 || r.BytesPerEntry > 150 {
			fmt.Fprintf(&md, "Target missed (see above).\n\n")
		}
	}
	result["draw"] = r
	if strings.Contains(*only, "fair") {
		var all []*draw.DrawFairResult
		fmt.Fprintf(&md, "| fairness run | entered fast / slow | won fast / slow | rate fast / slow | slow/fast | verify |\n|---|---|---|---|---|---|\n")
		var ratios []float64
		for i := range *runs {
			fo.Seed = uint64(i + 1)
			fr, err := draw.DrawFairness(ctx, drv, fo)
			if err != nil {
				return errorf(stderr, "fairness run %d: %v", i+1, err)
			}
			rep := draw.VerifySale(ctx, drv, fr.Sale)
			verdict := "PASS"
			if !rep.OK() {
				ok, verdict = false, "FAIL"
				fmt.Fprintf(stdout, "%s\n", rep.String())
			}
			fmt.Fprintf(&md, "| %d | %d / %d | %d / %d | %.4f / %.4f | %.3f | %s |\n", i+1, fr.Entered[0], fr.Entered[1], fr.Won[0], fr.Won[1], fr.FastRate, fr.SlowRate, fr.Ratio, verdict)
			ratios = append(ratios, fr.Ratio)
			all = append(all, fr)
		}
		fmt.Fprintf(&md, "| **median** | | | | **%.3f** (target 0.9-1.1) | |\n\n", driver.Median(ratios))
		result["fairness"] = all
	}
	unpin()
	for _, n := range pinned.Notes {
		fmt.Fprintf(&md, "Note: %s\n", n)
	}
	fmt.Fprint(stdout, md.String())
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errorf(stderr, "%v", err)
	}
	b, _ := json.MarshalIndent(result, "", "  ")
	_ = os.WriteFile(filepath.Join(*out, "draw.json"), b, 0o644)
	_ = os.WriteFile(filepath.Join(*out, "draw.md"), []byte(md.String()), 0o644)
	if !ok {
		fmt.Fprintln(stdout, "\ndraw: invariants FAIL")
		return 1
	}
	return 0
}
