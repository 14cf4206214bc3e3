package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/rabbitmgmt"
)

// Stack is the system under test: where the gateway, the backend and the ceiling answer, and
// the services behind them. Either Start made it (its own processes on free ports, its own
// RabbitMQ vhost and Postgres database) or the user described running processes.
type Stack struct {
	Gateway string // base URL of the gateway, e.g. http://127.0.0.1:8080
	// Gateways are the base URLs of every gateway (Gateway first) when Start ran more than one.
	Gateways   []string
	Backend    string // base URL of the backend's admin listener (admin API, baselines, metrics)
	Ceiling    string // base URL of a Caddy site that only does `respond` ("" if none)
	Admin      string // base URL of the gateway's Caddy admin endpoint ("" if unknown)
	AdminToken string
	RedisAddr  string
	PGURL      string // the database the backend writes
	MgmtURL    string // RabbitMQ management API (with credentials)
	Vhost      string // RabbitMQ vhost of the topology
	// Process ids for peak memory and CPU per request (0 when unknown).
	GatewayPID, BackendPID, RedisPID int
	// RabbitPID and PostgresPID are the roots of the broker's and the database's process trees
	// (beam.smp or its start script; the postmaster, whose children are the backends): private
	// ones with PrivateServices, else the shared servers found by their listening ports.
	RabbitPID, PostgresPID int
	// Shared is true when RabbitMQ and Postgres are the machine's shared servers: their CPU
	// then includes other users' work.
	Shared bool
	// Others are more process trees whose CPU a run counts and -pin pins, by name (the
	// identity benchmark's session stand-in).
	Others map[string]int
	// Logs of started processes.
	LogDir string

	cleanup []func()
}

// Close stops what Start started and removes the vhost and database it created.
func (s *Stack) Close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// StartOptions say how to start a private stack.
type StartOptions struct {
	// Root is the repository root (for `go build` and the default Caddyfile).
	Root string
	// BinDir holds caddy and seckill-backend; when empty, they are built into a temp dir.
	BinDir string
	// Caddyfile is the gateway configuration template (default Root/Caddyfile). Its `:8080`
	// site address and its admin address are rewritten to free ports, and a ceiling site with
	// a bare `respond` is appended.
	Caddyfile string
	// ExtraGlobal is inserted into the Caddyfile's global options block (e.g. trusted_proxies).
	ExtraGlobal string
	// RedisAddr is the Redis to use, unless PrivateRedis.
	RedisAddr string
	// PrivateRedis starts a redis-server of the run's own on a free port (append-only file,
	// fsync every second, like the stack's), so that no other gateway's outbox relay on a shared
	// Redis can pick up this run's orders, and this run's relay none of theirs.
	PrivateRedis bool
	AMQPURL      string // broker URL (any vhost: Start puts its own vhost in it)
	MgmtURL      string
	PGAdminURL   string // maintenance database URL, to create the bench database
	AdminToken   string
	TokenKey     string
	// Env is extra environment for both processes (KEY=value).
	Env []string
	// LogDir receives gateway.log and backend.log (default: a temp dir).
	LogDir string
	// Gateways is how many gateways to start (default 1), each its own Caddy process on its own
	// ports, sharing the backend's namespace, Redis and vhost: gateway-<i>.log for the others.
	Gateways int
	// PrivateServices starts a RabbitMQ node and a Postgres cluster of the run's own (AMQPURL,
	// MgmtURL and PGAdminURL are then ignored): their CPU per request is this run's alone, and
	// pinning them moves nobody else's servers.
	PrivateServices bool
}

// TrustLoopbackProxy is the global option the load generator needs: it runs on loopback and
// says who each simulated client is with X-Forwarded-For, so {client_ip} (what per-IP throttle
// zones key on) is the simulated client, as behind a real load balancer.
const TrustLoopbackProxy = `	servers {
		trusted_proxies static 127.0.0.1/32 ::1/128
		client_ip_headers X-Forwarded-For
	}`

// Build compiles the gateway and the backend into dir.
func Build(ctx context.Context, root, dir string) error {
	for _, b := range [][2]string{{"caddy", "./cmd/caddy"}, {"seckill-backend", "./cmd/seckill-backend"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	return nil
}

var (
	siteRe     = regexp.MustCompile(`(?m)^:8080\s*\{`)
	shopSiteRe = regexp.MustCompile(`(?m)^:8088\s*\{`)
	adminRe    = regexp.MustCompile(`(?m)^(\s*)admin\s+\S+`)
)

// dropSite removes the site block whose first line re matches: from that line to the first
// line after it that is a lone `}` (the shipped Caddyfiles close each site at column 0).
func dropSite(src string, re *regexp.Regexp) string {
	loc := re.FindStringIndex(src)
	if loc == nil {
		return src
	}
	end := strings.Index(src[loc[1]:], "\n}\n")
	if end < 0 {
		return src[:loc[0]]
	}
	rest := src[loc[1]+end+3:]
	if strings.HasSuffix(src[:loc[0]], "\n\n") {
		rest = strings.TrimPrefix(rest, "\n") // no double blank line where the site was
	}
	return src[:loc[0]] + rest
}

// GatewayConfig rewrites a Caddyfile for private ports: the :8080 site moves to gw, the admin
// endpoint to admin, and a ceiling site answering with a bare `respond` is added on ceil. The
// root Caddyfile's :8088 site (the sample shop behind the gateway, make run) is dropped: it
// needs the shop, and the benchmarks and tests of :8080 must not bind a fixed port.
func GatewayConfig(src string, gw, admin, ceil int, extraGlobal string) (string, error) {
	if !siteRe.MatchString(src) {
		return "", errors.New("the Caddyfile has no `:8080 {` site to move")
	}
	src = dropSite(src, shopSiteRe)
	out := siteRe.ReplaceAllString(src, ":"+strconv.Itoa(gw)+" {")
	global := "\tadmin 127.0.0.1:" + strconv.Itoa(admin)
	if adminRe.MatchString(out) {
		out = adminRe.ReplaceAllString(out, "${1}admin 127.0.0.1:"+strconv.Itoa(admin))
		global = ""
	}
	if extraGlobal != "" {
		if merged, ok := mergeServers(out, extraGlobal); ok {
			out = merged
		} else {
			global += "\n" + extraGlobal
		}
	}
	if global != "" {
		if i := globalBlock(out); i >= 0 {
			out = out[:i+1] + "\n" + global + "\n" + out[i+1:]
		} else {
			out = "{\n" + global + "\n}\n\n" + out
		}
	}
	// The ceiling: the same Caddy process and listener setup, no seckill handler, no Redis.
	out += fmt.Sprintf("\n# seckill-bench: the ceiling, Caddy's plain respond.\n:%d {\n\trespond \"ok\" 200\n}\n", ceil)
	return out, nil
}

// ShopGatewayConfig rewrites the root Caddyfile to serve only its :8088 site (the sample shop
// behind the gateway) on port site, with the admin endpoint on admin: the :8080 site is dropped.
// The shop, the backend and the rest come from the environment as in make run (SECKILL_SHOP,
// SECKILL_SHOP_PUBLIC_URL, SECKILL_BACKEND, ...).
func ShopGatewayConfig(src string, site, admin int) (string, error) {
	if !shopSiteRe.MatchString(src) {
		return "", errors.New("the Caddyfile has no `:8088 {` site to move")
	}
	out := dropSite(src, siteRe)
	out = shopSiteRe.ReplaceAllString(out, ":"+strconv.Itoa(site)+" {")
	if !adminRe.MatchString(out) {
		return "", errors.New("the Caddyfile has no admin option to move")
	}
	return adminRe.ReplaceAllString(out, "${1}admin 127.0.0.1:"+strconv.Itoa(admin)), nil
}

// serversRe finds a `servers {` global option (the shipped Caddyfiles set timeouts there).
var serversRe = regexp.MustCompile(`(?m)^\s*servers\s*\{[ \t]*\n`)

// mergeServers puts the lines of an extra `servers { ... }` option into the Caddyfile's own
// `servers {` block: Caddy refuses two `servers` options for the same listeners.
func mergeServers(src, extra string) (string, bool) {
	lines := strings.Split(strings.TrimRight(extra, "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "servers {" || strings.TrimSpace(lines[len(lines)-1]) != "}" {
		return "", false
	}
	loc := serversRe.FindStringIndex(src)
	if loc == nil || globalBlock(src) < 0 || loc[0] < globalBlock(src) {
		return "", false
	}
	inner := strings.Join(lines[1:len(lines)-1], "\n") + "\n"
	return src[:loc[1]] + inner + src[loc[1]:], true
}

// globalBlock is the offset of the `{` opening the global options block, or -1: the block
// must be the first thing after comments and blank lines.
func globalBlock(src string) int {
	off := 0
	for _, line := range strings.SplitAfter(src, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case t == "{":
			return off + strings.Index(line, "{")
		default:
			return -1
		}
		off += len(line)
	}
	return -1
}

// Start builds (unless BinDir is set) and starts a backend and a gateway on free ports with a
// fresh RabbitMQ vhost and Postgres database, and waits until both answer.
func Start(ctx context.Context, o StartOptions) (_ *Stack, err error) {
	s := &Stack{AdminToken: o.AdminToken, RedisAddr: o.RedisAddr, MgmtURL: o.MgmtURL}
	defer func() {
		if err != nil {
			s.Close() // what was started so far
		}
	}()
	tmp, err := os.MkdirTemp("", "seckill-bench-")
	if err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, func() { _ = os.RemoveAll(tmp) })
	s.LogDir = o.LogDir
	if s.LogDir == "" {
		s.LogDir = tmp
	}
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, err
	}
	bin := o.BinDir
	if bin == "" {
		bin = tmp
		if err := Build(ctx, o.Root, bin); err != nil {
			return nil, err
		}
	}
	id := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)

	if o.PrivateRedis {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		rs, err := proc.NewRedis(filepath.Join(tmp, "redis"), port, proc.AOFEverySec...)
		if err != nil {
			return nil, err
		}
		rs.Log = filepath.Join(s.LogDir, "redis.log")
		rs.StartTimeout = 20 * time.Second
		s.cleanup = append(s.cleanup, func() { _ = rs.Stop(context.Background()) })
		if err := rs.Start(ctx); err != nil {
			return nil, err
		}
		s.RedisPID = rs.PID()
		s.RedisAddr = rs.Addr
		o.RedisAddr = s.RedisAddr
	}

	if o.PrivateServices {
		if err := privateServices(ctx, s, &o, tmp, id); err != nil {
			return nil, err
		}
	} else {
		s.Shared = true
		s.RabbitPID, s.PostgresPID = ListenerPID(urlPort(o.AMQPURL, 5672)), ListenerPID(urlPort(o.PGAdminURL, 5432))
	}

	// RabbitMQ: a vhost of our own, so no other consumer drains our queue and theirs is untouched.
	s.Vhost = "bench-" + id
	mg, err := rabbitmgmt.New(o.MgmtURL)
	if err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, func() { _ = mg.DeleteVhost(context.Background(), s.Vhost) })
	if err := mg.CreateVhost(ctx, s.Vhost); err != nil {
		return nil, fmt.Errorf("create RabbitMQ vhost: %w", err)
	}
	au, err := url.Parse(o.AMQPURL)
	if err != nil {
		return nil, fmt.Errorf("AMQP URL: %w", err)
	}
	au.Path = "/" + s.Vhost
	amqpURL := au.String()

	// Postgres: a database of our own.
	db := "bench_" + id
	admin, err := pgx.Connect(ctx, o.PGAdminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	_ = admin.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	s.cleanup = append(s.cleanup, func() {
		c, err := pgx.Connect(context.Background(), o.PGAdminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	pu, _ := url.Parse(o.PGAdminURL)
	pu.Path = "/" + db
	s.PGURL = pu.String()

	ports, err := proc.FreePorts(5)
	if err != nil {
		return nil, err
	}
	bport, gport, aport, cport, baport := ports[0], ports[1], ports[2], ports[3], ports[4]
	s.Backend = fmt.Sprintf("http://127.0.0.1:%d", baport)
	s.Gateway = fmt.Sprintf("http://127.0.0.1:%d", gport)
	s.Ceiling = fmt.Sprintf("http://127.0.0.1:%d", cport)
	s.Admin = fmt.Sprintf("http://127.0.0.1:%d", aport)

	env := append(os.Environ(),
		"SECKILL_REDIS_ADDR="+o.RedisAddr, "SECKILL_AMQP_URL="+amqpURL, "SECKILL_PG_URL="+s.PGURL,
		"SECKILL_ADMIN_TOKEN="+o.AdminToken, "SECKILL_TOKEN_KEY="+o.TokenKey, "SECKILL_BASELINES=1",
		fmt.Sprintf("SECKILL_BACKEND_LISTEN=127.0.0.1:%d", bport), fmt.Sprintf("SECKILL_BACKEND_ADMIN_LISTEN=127.0.0.1:%d", baport),
		fmt.Sprintf("SECKILL_BACKEND=127.0.0.1:%d", bport),
		// One namespace for this stack's backend and gateway (the Caddyfile reads it): the
		// backend records it in the sales it preheats and the gateway's relay takes only
		// those, so a demo or another stack on the same Redis never takes this one's winners.
		fmt.Sprintf("SECKILL_NAMESPACE=bench-%d", gport))
	env = append(env, o.Env...)

	backend, err := startProc(filepath.Join(bin, "seckill-backend"), nil, env, filepath.Join(s.LogDir, "backend.log"))
	if err != nil {
		return nil, err
	}
	s.BackendPID = backend.PID()
	s.cleanup = append(s.cleanup, func() { backend.Stop(15 * time.Second) })
	if err := waitHTTP(ctx, "backend", backend, s.Backend+"/healthz"); err != nil {
		return nil, err
	}

	cf := o.Caddyfile
	if cf == "" {
		cf = filepath.Join(o.Root, "Caddyfile")
	}
	src, err := os.ReadFile(cf)
	if err != nil {
		return nil, err
	}
	conf, err := GatewayConfig(string(src), gport, aport, cport, o.ExtraGlobal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cf, err)
	}
	confPath := filepath.Join(tmp, "Caddyfile")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	gateway, err := startProc(filepath.Join(bin, "caddy"), []string{"run", "--config", confPath, "--adapter", "caddyfile"},
		env, filepath.Join(s.LogDir, "gateway.log"))
	if err != nil {
		return nil, err
	}
	s.GatewayPID = gateway.PID()
	s.cleanup = append(s.cleanup, func() { gateway.Stop(15 * time.Second) })
	if err := waitHTTP(ctx, "gateway", gateway, s.Ceiling+"/"); err != nil {
		return nil, err
	}
	s.Gateways = []string{s.Gateway}
	for i := 1; i < o.Gateways; i++ {
		if err := s.startGateway(ctx, i, bin, tmp, string(src), o.ExtraGlobal, env); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// startGateway starts the i-th extra gateway on ports of its own.
func (s *Stack) startGateway(ctx context.Context, i int, bin, tmp, src, extraGlobal string, env []string) error {
	ports, err := proc.FreePorts(3)
	if err != nil {
		return err
	}
	conf, err := GatewayConfig(src, ports[0], ports[1], ports[2], extraGlobal)
	if err != nil {
		return err
	}
	confPath := filepath.Join(tmp, fmt.Sprintf("Caddyfile-%d", i))
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return err
	}
	gw, err := startProc(filepath.Join(bin, "caddy"), []string{"run", "--config", confPath, "--adapter", "caddyfile"},
		env, filepath.Join(s.LogDir, fmt.Sprintf("gateway-%d.log", i)))
	if err != nil {
		return err
	}
	s.cleanup = append(s.cleanup, func() { gw.Stop(15 * time.Second) })
	if err := waitHTTP(ctx, "gateway", gw, fmt.Sprintf("http://127.0.0.1:%d/", ports[2])); err != nil {
		return err
	}
	s.Gateways = append(s.Gateways, fmt.Sprintf("http://127.0.0.1:%d", ports[0]))
	return nil
}

// gateways are the gateways' base URLs (the one Gateway when only it is known).
func (s *Stack) gateways() []string {
	if len(s.Gateways) > 0 {
		return s.Gateways
	}
	return []string{s.Gateway}
}

// urlPort is the port of a service URL (def when it names none).
func urlPort(u string, def int) int {
	pu, err := url.Parse(u)
	if err != nil {
		return 0
	}
	if p, err := strconv.Atoi(pu.Port()); err == nil {
		return p
	}
	return def
}

// startProc starts a server of the stack; it gets SIGTERM, not SIGKILL, when the bench dies,
// so it still shuts down cleanly.
func startProc(path string, args, env []string, logPath string) (*proc.Process, error) {
	_ = os.Remove(logPath) // a fresh log per run
	return proc.Start(proc.Spec{Path: path, Args: args, Env: env, Log: logPath, DeathSignal: syscall.SIGTERM})
}

// waitHTTP waits until u answers with a status below 500.
func waitHTTP(ctx context.Context, name string, p *proc.Process, u string) error {
	return proc.WaitReady(ctx, name+" at "+u, p, p.Log, 60*time.Second, proc.HTTPReady(u))
}
