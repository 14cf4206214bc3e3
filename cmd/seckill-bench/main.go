// Command seckill-bench drives a real flash sale through the real stack, measures it, and
// checks every invariant of DESIGN.md afterwards against Redis, RabbitMQ and Postgres.
//
//	seckill-bench                 the comparison (make bench): pessimistic lock, optimistic lock,
//	                              the full edge and Caddy's plain respond under the same crowd,
//	                              then the full edge under an open arrival rate
//	seckill-bench -only edge      one contestant
//	seckill-bench -only ceiling,peer,edge,open,open-quiet,slo -rate 600 -pin -private-services
//	                              the comparison's figures (scripts/bench-onepass.sh): respond, the
//	                              nginx + lua gate and the edge side by side, the open model
//	                              with and without the drain poll, the capacity at p99 <= 20 ms
//	seckill-bench verify -sale S  only the invariants of an existing sale
//	seckill-bench verify-room -sale S  the waiting room's order against its revealed seed
//	seckill-bench verify-draw -sale S  a draw recomputed from its published result and entries
//	                              (-proof-user U: also U's inclusion proof; -save/-file: offline)
//	seckill-bench room            the waiting room's fairness scenario and poll benchmark; with
//	                              -only scale, lastunits: waiters at scale through two gateways
//	                              (Redis commands per poll) and the last units with half the
//	                              waiters absent, with and without the presence rule
//	seckill-bench draw            draws: entry cost against a room entry, a draw of a million
//	                              entries, and fast against slow entrants through two gateways
//	seckill-bench draw-sale       a whole draw sale on a running stack (make run's): entries,
//	                              the draw, two waves of claims, every invariant, verify-draw
//	seckill-bench identity        identity at the edge: demo path, local JWT, cached and plain
//	                              forward_auth side by side (CPU per request, session calls)
//
// By default it builds nothing and starts its own backend and gateway (from -bin) on free
// ports, with a RabbitMQ vhost and a Postgres database of their own; -gateway and -backend
// point it at running ones instead. See docs/bench.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: the first argument that names it, then its own flags.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// subcommands is the one table of seckill-bench's subcommands, one per scenario or check
// (the scenarios themselves live in bench/scenario/<name>); any other first argument is a
// flag of the comparison, runBench.
var subcommands = map[string]command{
	"verify":        runVerify,       // the invariants of an existing sale (internal/invariants)
	"verify-room":   runVerifyRoom,   // a room's order against its revealed seed
	"verify-draw":   runVerifyDraw,   // a draw recomputed from its result and entries (bench/drawcheck)
	"verify-report": runVerifyReport, // a signed fairness report against its key and evidence
	"room":          runRoom,         // bench/scenario/room
	"draw":          runDraw,         // bench/scenario/draw
	"draw-sale":     runDrawSale,     // bench/scenario/draw, on a running stack
	"identity":      runIdentity,     // bench/scenario/identity
	"soak":          runSoak,         // bench/scenario/soak
	// the identity benchmark's stand-in shop, a process of its own (bench/scenario/identity)
	"session-standin": func(ctx context.Context, args []string, _, stderr io.Writer) int {
		return runStandin(ctx, args, stderr)
	},
}

// run is the command without the process around it, so tests can call it and read its exit
// code: 0 when every check passed, 1 when an invariant FAILed, 2 on bad usage or a broken setup.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if cmd, ok := subcommands[args[0]]; ok {
			return cmd(ctx, args[1:], stdout, stderr)
		}
	}
	return runBench(ctx, args, stdout, stderr) // the comparison: bench/scenario/crowd
}

func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func errorf(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "seckill-bench: "+format+"\n", args...)
	return 2
}
