package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/bench/scenario/identity"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runIdentity is `seckill-bench identity`: identity at the edge, the demo path,
// local JWT (seckill_identity), cached forward_auth (seckill_session) and Caddy's forward_auth
// with and without keep-alive, side by side on one gateway, round after round; CPU per request
// of the gateway and of the session stand-in, and the stand-in's calls (docs/bench.md).
func runIdentity(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench identity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o identity.IdentityOptions
	cases := fs.String("cases", strings.Join(identity.IdentityCases, ","), "cases to run, in this order in the first round (rotated by one each round): "+strings.Join(identity.IdentityCases, ", "))
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds of every case (the table reports medians)")
	fs.IntVar(&o.Sessions, "sessions", 2000, "fresh sessions (buyers) per case and round; they click in turn until the rush ends")
	fs.IntVar(&o.Conns, "conns", 64, "connections of the closed model")
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "each case's rush in each round")
	fs.DurationVar(&o.TTL, "ttl", 30*time.Second, "seckill_session's ttl")
	fs.BoolVar(&o.Throttle, "throttle", true, "every route has the demo Caddyfile's per-IP and per-user throttle zones (shadow: counted, never refusing), as the demo path does; false: the identity step alone before seckill_token")
	fs.StringVar(&o.Client, "client", "raw", "load client: raw or nethttp")
	out := fs.String("out", "bench-results/identity", "directory for identity.json, identity.md and the logs")
	root := fs.String("root", ".", "repository root")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	amqpURL := fs.String("amqp", stackenv.AMQPURL(), "RabbitMQ URL (a vhost of its own is created)")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	pgAdmin := fs.String("pg-admin", stackenv.PGAdminURL(), "Postgres maintenance URL")
	adminToken := fs.String("admin-token", stackenv.Secret("SECKILL_ADMIN_TOKEN"), "backend admin token (default SECKILL_ADMIN_TOKEN, else a random one for the stack this run starts)")
	pinning := addPinFlags(fs)
	gwProfile := addGatewayProfileFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Cases = strings.Split(*cases, ",")
	for _, c := range o.Cases {
		if !slices.Contains(identity.IdentityCases, c) {
			return errorf(stderr, "-cases: unknown case %q", c)
		}
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "[identity] "+format+"\n", a...) }
	o.Logf = logf
	logDir := filepath.Join(*out, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return errorf(stderr, "%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	// With -pin, the stand-in and the stack are born on the server CPUs.
	if err := pinning.beforeStack(); err != nil {
		return errorf(stderr, "-pin: %v", err)
	}
	standin, err := identity.StartStandin(ctx, exe, logDir)
	if err != nil {
		return errorf(stderr, "session stand-in: %v", err)
	}
	defer standin.Close()
	o.Standin = standin
	caddyfile, ports, err := identity.WriteIdentityCaddyfile(logDir, standin.URL, o.TTL, o.Throttle, proc.FreePorts)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	o.Ports = ports
	stack, err := driver.Start(ctx, driver.StartOptions{Root: *root, BinDir: *bin, Caddyfile: caddyfile, PrivateRedis: true,
		AMQPURL: *amqpURL, MgmtURL: *mgmt, PGAdminURL: *pgAdmin, AdminToken: *adminToken,
		TokenKey: stackenv.Secret("SECKILL_TOKEN_KEY"), LogDir: logDir,
		PrivateServices: *pinning.private})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer stack.Close()
	stack.Others = map[string]int{"standin": standin.PID}
	logf("gateway %s (demo), stand-in %s, redis %s; other sites on ports %v", stack.Gateway, standin.URL, stack.RedisAddr, ports)
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer drv.Close()
	var notes crowd.Result // pinFlags.start reports there
	unpin, err := pinning.start(stack, &notes, logf)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	o.AroundRush = gwProfile.around(ctx, stack, logf)
	res, err := identity.Identity(ctx, drv, o)
	gwProfile.finish(ctx, stack, logf)
	unpin()
	if err != nil {
		return errorf(stderr, "%v", err)
	}

	var md strings.Builder
	m := res.Machine
	fmt.Fprintf(&md, "Command: `seckill-bench identity %s`\nMachine: %d CPUs, %d MiB, %s, %s; date %s\n",
		strings.Join(args, " "), m.CPUs, m.MemMiB, m.CPU, m.Go, res.Date.Format("2006-01-02 15:04 MST"))
	if !*pinning.pin {
		fmt.Fprintf(&md, "Not pinned: the load generator shares the %d CPUs with the servers.\n", m.CPUs)
	}
	for _, n := range notes.Notes {
		fmt.Fprintf(&md, "Note: %s.\n", n)
	}
	identityMarkdown(&md, res, o.Rounds)
	fmt.Fprint(stdout, md.String())
	b, _ := json.MarshalIndent(map[string]any{"identity": res, "notes": notes.Notes, "command": "seckill-bench identity " + strings.Join(args, " ")}, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "identity.json"), b, 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "identity.md"), []byte(md.String()), 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	fmt.Fprintf(stdout, "\nwrote %s/identity.json and %s/identity.md\n", *out, *out)
	if !res.OK() {
		fmt.Fprintf(stdout, "identity: a case answered fewer than %.0f %% of its requests with a token: its numbers measure refusals (see the outcomes above and %s)\n", 100*identity.MinOKShare, logDir)
		return 1
	}
	return 0
}

// identityMarkdown writes the medians, the targets and every rush.
func identityMarkdown(w io.Writer, r *identity.IdentityResult, rounds int) {
	route := "the identity step, then seckill_token (no throttle)"
	if r.Throttle {
		route = "the identity step, the demo's per-IP and per-user throttle zones (shadow), then seckill_token"
	}
	fmt.Fprintf(w, "\nPOST /seckill/<sale>/token of a preheated sale, %d fresh sessions per case and round clicking in turn, %d connections, %s per rush, %d rounds (cases rotated each round); one Caddy process, one site per case, each route %s; seckill_session ttl %s. Medians of the rounds; ratios are the median of each round's ratio to the demo path.\n\n",
		r.Sessions, r.Conns, r.Duration, rounds, route, r.TTL)
	fmt.Fprintln(w, "| case | req/s | p99 | gateway µs/req | session service µs/req | gateway + session µs/req | gateway / demo | total / demo | redis µs/req | session calls per rush | calls per session | answered 200 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range r.Cases {
		fmt.Fprintf(w, "| %s | %.0f | %.1f ms | %.0f | %.0f | %.0f | %.2fx | %.2fx | %.0f | %.0f | %.3f | %.1f %% |\n", c.Label, c.Throughput, c.P99ms,
			c.GatewayUs, c.StandinUs, c.TotalUs, c.GatewayRatio, c.TotalRatio, c.RedisUs, c.SessionCalls, c.CallsPerSession, 100*c.OKShare)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\nTargets:")
		fmt.Fprintln(w)
		for _, t := range r.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "MISSED"
			}
			fmt.Fprintf(w, "- %s: %s (want %s): %s\n", t.Name, t.Got, t.Want, verdict)
		}
	}
	fmt.Fprintln(w, "\nEvery rush:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| round | case | req/s | gateway µs/req | session service µs/req | redis µs/req | sessions | session calls | JWKS fetches | outcomes |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range r.Sides {
		fmt.Fprintf(w, "| %d | %s | %.0f | %.0f | %.0f | %.0f | %d | %d | %d | %s |\n", s.Round, s.Case, s.Throughput, s.CPU["gateway"], s.CPU["standin"], s.CPU["redis"],
			s.Sessions, s.SessionCalls, s.JWKSCalls, outcomeCounts(s.Outcomes))
	}
}

func outcomeCounts(m map[string]int) string {
	var parts []string
	for _, k := range load.SortedOutcomes(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// runStandin is the hidden `seckill-bench session-standin -listen ADDR`: the stand-in shop of
// the identity benchmark (identity.Standin), as its own process so its CPU is measured apart.
func runStandin(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench session-standin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := identity.ServeStandin(ctx, *listen); err != nil {
		return errorf(stderr, "session-standin: %v", err)
	}
	return 0
}
