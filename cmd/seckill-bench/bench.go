package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/report"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/stackenv"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	people := crowd.DefaultCrowd()
	fs.IntVar(&people.Users, "users", people.Users, "distinct users in the crowd (each gets a token and clicks)")
	fs.Float64Var(&people.Repeaters, "repeaters", people.Repeaters, "share of users who click 2-5 times")
	fs.IntVar(&people.Bots, "bots", people.Bots, "scripted users hammering the buy endpoint")
	fs.IntVar(&people.BotHits, "bot-hits", people.BotHits, "clicks per bot")
	fs.IntVar(&people.Replays, "replays", people.Replays, "clicks presenting another user's token")
	fs.IntVar(&people.Forged, "forged", people.Forged, "clicks presenting a forged token")
	fs.IntVar(&people.Late, "late", people.Late, "users arriving after the rush")
	fs.Uint64Var(&people.Seed, "seed", people.Seed, "seed of the crowd's shuffle")
	stock := fs.Int("stock", 10000, "units on sale")
	conns := fs.Int("conns", 500, "connections of the closed model")
	rate := fs.Float64("rate", 10000, "arrival rate (purchases/s) of the open-model run of the full edge")
	openConns := fs.Int("open-conns", 2000, "most requests in flight in the open model")
	duration := fs.Duration("duration", 10*time.Second, "cap of each rush")
	drain := fs.Duration("drain-timeout", 30*time.Second, "longest wait for the winners to reach Postgres")
	only := fs.String("only", "pessimistic,optimistic,edge,ceiling,open,ceiling-open", "contestants to run, in order: pessimistic, optimistic, edge, ceiling, open (the full edge at -rate), ceiling-open (respond at -rate), variants (the variants crowd: a sale with variants and a per-user limit; not in the default list); the comparison's (docs/bench.md), not in the default list either: peer (the nginx + lua gate, bench/nginxgate), nginx-return (nginx's return 200), open-quiet (the full edge at -rate with the drain poll of Postgres off during the rush), slo (the highest open-model rate with p99 <= -slo-p99, for the edge and respond)")
	vcrowd := crowd.DefaultVariantCrowd()
	fs.IntVar(&vcrowd.Users, "variant-users", vcrowd.Users, "users of the variants crowd (-only variants)")
	fs.IntVar(&vcrowd.Limit, "variant-limit", vcrowd.Limit, "per_user_limit of the variants crowd's sale")
	gateways := fs.Int("gateways", 1, "gateways to start (the variants crowd spreads its users over them)")
	client := fs.String("client", "raw", "load client: raw (a minimal HTTP/1.1 client, cheapest per request) or nethttp")
	out := fs.String("out", "bench-results", "directory for result.json, report.html and accepted-<sale>.json")

	gateway := fs.String("gateway", "", "base URL of a running gateway (default: start one)")
	backendURL := fs.String("backend", "", "base URL of the running backend's admin listener (with -gateway; default http://127.0.0.1:8082)")
	ceiling := fs.String("ceiling", "", "base URL of a Caddy site that only does `respond` (with -gateway)")
	gatewayPID := fs.Int("gateway-pid", 0, "pid of the running gateway, for its peak memory")
	backendPID := fs.Int("backend-pid", 0, "pid of the running backend, for its peak memory")
	vhost := fs.String("vhost", "/", "RabbitMQ vhost of the running stack (with -gateway)")
	pgURL := fs.String("pg", stackenv.PGURL(), "Postgres URL of the running backend's database (with -gateway)")

	root := fs.String("root", ".", "repository root (Caddyfile, sources to build)")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	caddyfile := fs.String("caddyfile", "", "gateway Caddyfile template (default: <root>/Caddyfile)")
	logDir := fs.String("logs", "", "where started processes log (default: <out>/logs)")
	redisAOF := fs.Bool("redis-aof", true, "the private Redis keeps its append-only file (fsync every second), as production does; false: the tail breakdown's control run")
	serverEnv := fs.String("server-env", "", "extra environment of the gateway and backend this run starts, comma-separated KEY=value (e.g. GOGC=400: the tail breakdown's GC run)")
	privateRedis := fs.Bool("private-redis", true, "start a Redis of the run's own (isolated from other gateways' relays); false: use -redis")
	redisAddr := fs.String("redis", stackenv.RedisAddr(), "Redis host:port")
	amqpURL := fs.String("amqp", stackenv.AMQPURL(), "RabbitMQ URL (a vhost of its own is created)")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	pgAdmin := fs.String("pg-admin", stackenv.PGAdminURL(), "Postgres maintenance URL (a database of its own is created)")
	adminToken := fs.String("admin-token", stackenv.Secret("SECKILL_ADMIN_TOKEN"), "backend admin token (default SECKILL_ADMIN_TOKEN, else a random one for the stack this run starts)")
	tokenKey := stackenv.Secret("SECKILL_TOKEN_KEY")
	sabotage := fs.Int("sabotage-stock", 0, "TEST ONLY: give the gate this many units Postgres does not have (as a gate without its stock check would); verification must FAIL")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's CPU profile here")
	pinning := addPinFlags(fs)
	gwProfile := addGatewayProfileFlags(fs)
	onepass := addOnePassFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return errorf(stderr, "%v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errorf(stderr, "%v", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	kinds := strings.Split(*only, ",")
	for _, k := range kinds {
		switch k {
		case crowd.Pessimistic, crowd.Optimistic, crowd.Edge, crowd.Ceiling, "open", "ceiling-open", "variants",
			crowd.Peer, crowd.PeerReturn, "open-quiet", "slo":
		default:
			return errorf(stderr, "-only: unknown contestant %q", k)
		}
	}
	var progress io.Writer
	if isTTY(stderr) {
		progress = stderr
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "[bench] "+format+"\n", a...) }

	var stack *driver.Stack
	if *gateway != "" {
		stack = &driver.Stack{Gateway: *gateway, Backend: *backendURL, Ceiling: *ceiling, AdminToken: *adminToken,
			RedisAddr: *redisAddr, PGURL: *pgURL, MgmtURL: *mgmt, Vhost: *vhost, GatewayPID: *gatewayPID, BackendPID: *backendPID}
		if stack.Backend == "" {
			stack.Backend = "http://127.0.0.1:8082"
		}
	} else {
		if *logDir == "" {
			*logDir = filepath.Join(*out, "logs")
		}
		logf("starting backend and gateway on free ports (logs in %s)", *logDir)
		if err := pinning.beforeStack(); err != nil {
			return errorf(stderr, "-pin: %v", err)
		}
		var err error
		stack, err = driver.Start(ctx, driver.StartOptions{Root: *root, BinDir: *bin, Caddyfile: *caddyfile, RedisAddr: *redisAddr, PrivateRedis: *privateRedis,
			AMQPURL: *amqpURL, MgmtURL: *mgmt, PGAdminURL: *pgAdmin, AdminToken: *adminToken, TokenKey: tokenKey, LogDir: *logDir,
			ExtraGlobal: harness.TrustLoopbackProxy, Gateways: *gateways, PrivateServices: *pinning.private,
			RedisNoAOF: !*redisAOF, Env: splitEnv(*serverEnv)})
		if err != nil {
			return errorf(stderr, "%v", err)
		}
		defer stack.Close()
		logf("gateway %s, backend %s, ceiling %s, redis %s, vhost %s", stack.Gateway, stack.Backend, stack.Ceiling, stack.RedisAddr, stack.Vhost)
	}
	var peer crowd.PeerTarget
	if slices.Contains(kinds, crowd.Peer) || slices.Contains(kinds, crowd.PeerReturn) || slices.Contains(kinds, "slo") {
		p, err := startPeer(ctx, onepass, *out, stack)
		if err != nil {
			return errorf(stderr, "%v", err)
		}
		defer p.Close()
		peer.URL = p.URL
		logf("peer (nginx + lua gate) %s, pid %d, prefix %s", p.URL, p.PID(), p.Dir)
	}
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	defer drv.Close()

	res := &crowd.Result{Date: time.Now().UTC(), Command: "seckill-bench " + strings.Join(args, " "), Machine: driver.ThisMachine(),
		Crowd: people, Stock: *stock, Conns: *conns, Rate: *rate}
	if !*pinning.pin {
		res.Notes = append(res.Notes, fmt.Sprintf("the load generator (%s client, %d connections) runs on the same %d CPUs as the servers and competes with them: every contestant pays the same tax",
			*client, *conns, res.Machine.CPUs))
	}
	unpin, err := pinning.start(stack, res, logf)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	closed := crowd.Options{Crowd: people, Stock: *stock, Model: load.Model{Connections: *conns}, Duration: *duration, DrainTimeout: *drain, Progress: progress, Client: *client,
		AroundRush: gwProfile.around(ctx, stack, logf)}
	if *sabotage > 0 {
		closed.Sabotage = crowd.InflateRedisStock(*sabotage)
		res.Notes = append(res.Notes, fmt.Sprintf("SABOTAGED: the gate was given %d units Postgres does not have", *sabotage))
	}
	for _, k := range kinds {
		if ctx.Err() != nil {
			break
		}
		var o *crowd.Outcome
		var err error
		switch k {
		case crowd.Pessimistic, crowd.Optimistic:
			o, err = crowd.RunBaseline(ctx, drv, k, closed)
		case crowd.Edge:
			o, err = crowd.RunEdge(ctx, drv, closed)
		case crowd.Ceiling:
			o, err = crowd.RunCeiling(ctx, drv, closed)
		case "variants":
			var vo *crowd.VariantOutcome
			if vo, err = crowd.RunVariants(ctx, drv, vcrowd, closed); vo != nil {
				o = vo.Outcome
			}
		case crowd.Peer:
			o, err = crowd.RunPeer(ctx, drv, peer, closed)
		case crowd.PeerReturn:
			o, err = crowd.RunPeerReturn(ctx, drv, peer, closed)
		case "slo":
			// The peer in the same run as the edge and respond: the three searches see the same
			// machine and the same services.
			for _, kind := range []string{crowd.Edge, crowd.Ceiling, crowd.Peer} {
				s, serr := crowd.RunSLO(ctx, drv, kind, peer, closed, onepass.slo(), *onepass.sloConns, *onepass.sloProbe, logf)
				if s != nil {
					res.SLO = append(res.SLO, s)
				}
				if serr != nil {
					return errorf(stderr, "slo %s: %v", kind, serr)
				}
				logf("capacity at p99 <= %v, %s: %.0f/s after %d probes", *onepass.sloP99, s.Name, s.Rate, len(s.Probes))
			}
			continue
		case "open", "ceiling-open", "open-quiet":
			op := closed
			op.Model = load.Model{Rate: *rate, Connections: *openConns}
			op.Label = fmt.Sprintf("open %.0f/s", *rate)
			switch k {
			case "open":
				o, err = crowd.RunEdge(ctx, drv, op)
			case "open-quiet":
				op.DrainAfterRush = true
				op.Label += ", no drain poll in the rush"
				o, err = crowd.RunEdge(ctx, drv, op)
			default:
				o, err = crowd.RunCeiling(ctx, drv, op)
			}
		}
		if err != nil {
			return errorf(stderr, "%s: %v", k, err)
		}
		logf("%-26s %7d requests  %8.0f req/s  p99 %7.2f ms  %s", o.Name, o.Rush.Completed, o.Rush.Throughput, o.Latency.P99, okWord(o))
		if k == "open" || k == "ceiling-open" || k == "open-quiet" {
			res.Open = append(res.Open, o)
		} else {
			res.Contestants = append(res.Contestants, o)
		}
	}
	gwProfile.finish(ctx, stack, logf)
	unpin()
	if stack.GatewayPID > 0 || stack.BackendPID > 0 {
		res.PeakRSS = map[string]int{}
		if v := proc.PeakRSS(stack.GatewayPID) / 1024; v > 0 {
			res.PeakRSS["gateway"] = int(v)
		}
		if v := proc.PeakRSS(stack.BackendPID) / 1024; v > 0 {
			res.PeakRSS["backend"] = int(v)
		}
	}
	res.Evaluate()
	report.Text(stdout, res)
	if err := writeFiles(*out, res); err != nil {
		return errorf(stderr, "%v", err)
	}
	fmt.Fprintf(stdout, "\nwrote %s/result.json and %s/report.html\n", *out, *out)
	if !res.OK() {
		return 1
	}
	return 0
}

func okWord(o *crowd.Outcome) string {
	if o.Verify == nil {
		return ""
	}
	if o.OK() {
		return "invariants PASS"
	}
	return "invariants FAIL"
}

func writeFiles(dir string, res *crowd.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "result.json"), res); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := report.HTML(f, res); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, o := range res.All() {
		if o == nil || o.Sale == "" || o.Winners == nil {
			continue
		}
		b, _ := json.Marshal(o.Winners)
		if err := os.WriteFile(filepath.Join(dir, "accepted-"+o.Sale+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// splitEnv splits -server-env's "K=v,K2=v2" (empty: none).
func splitEnv(s string) []string {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			out = append(out, kv)
		}
	}
	return out
}
