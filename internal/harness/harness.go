// Package harness starts the whole stack as processes: Redis, RabbitMQ and Postgres (the
// machine's shared servers, each run isolated in a vhost, a database and a namespace of its
// own, or private servers of the run's own), N backends (cmd/seckill-backend) and N gateways
// (cmd/caddy running a Caddyfile moved to free ports). Every part is a proc.Server, so a fault
// run may stop, kill and start it again. seckill-bench (bench.Start), seckill-chaos
// (chaos.StartCluster) and the whole-stack tests (bench's, deploy's shipped Caddyfiles) start
// their stacks here, once. Tests that need a gateway inside the test process (a tracer of
// their own, a fake store) use internal/handlertest instead.
package harness

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/rabbitmgmt"
)

// Options say what to start. The zero value of each field is documented with it.
type Options struct {
	// Name prefixes what the run creates on servers others may share: the namespace, the
	// RabbitMQ vhost, the Postgres database, private node names ("bench", "chaos").
	Name string
	// Root is the repository root (the sources when BinDir is empty; the default Caddyfile).
	Root string
	// BinDir holds caddy and seckill-backend; when empty they are built into Dir/bin.
	BinDir string
	// Dir receives the servers' data and the gateways' Caddyfiles. Empty: a temp dir that
	// Close removes.
	Dir string
	// LogDir receives every process's log (default Dir).
	LogDir string

	// Caddyfile is the gateway template (default Root/Caddyfile). GatewayConfig moves its
	// `:8080` site and admin endpoint to free ports and adds a ceiling site.
	Caddyfile string
	// ExtraGlobal is inserted into the Caddyfile's global options (e.g. TrustLoopbackProxy).
	ExtraGlobal string
	// ShopSite makes the gateways serve the Caddyfile's :8088 site instead of its :8080 one:
	// the sample shop behind the gateway, as make run serves it (ShopGatewayConfig; ExtraGlobal
	// is not added), each with SECKILL_SHOP_PUBLIC_URL its own URL. The shop is the caller's
	// (SECKILL_SHOP in Env).
	ShopSite bool
	// GateRelay, when set, is added to the relay settings of the seckill global option (e.g.
	// "claim_min_idle 5s"), after the Caddyfile's own, so it wins. Empty: the Caddyfile's own
	// settings. (The name is from seckill_gate's relay block, which the adapter now refuses:
	// the relay's settings are the app's.)
	GateRelay string
	// Gateways and Backends are the instance counts (default 1 each). Every gateway proxies
	// /orders/ to every backend; the first backend applies the migrations.
	Gateways, Backends int
	AdminToken         string
	TokenKey           string
	// Env is extra environment for the backends and gateways (KEY=value).
	Env []string

	// RedisAddr is the Redis to use, unless PrivateRedis.
	RedisAddr string
	// PrivateRedis starts a redis-server of the run's own (append-only file fsynced every
	// second, like the stack's): no other gateway's outbox relay on a shared Redis can pick up
	// this run's orders, and this run's relay none of theirs.
	PrivateRedis bool
	// RedisNoAOF starts the private Redis without its append-only file (a benchmark's control
	// run: what the fsync and the AOF rewrite cost the tail). Never for a test of durability.
	RedisNoAOF bool
	// AMQPURL, MgmtURL and PGAdminURL are the shared RabbitMQ (any vhost), its management API
	// and Postgres's maintenance database, unless PrivateServices.
	AMQPURL, MgmtURL, PGAdminURL string
	// PrivateServices starts a RabbitMQ node and a Postgres cluster of the run's own: their
	// CPU is the run's alone, and a fault may stop them without touching anybody else.
	PrivateServices bool
	// Management enables the private RabbitMQ's management API (Stack.MgmtURL), which a run
	// needs to count queues. Without it the private node is lighter and the run uses its
	// default vhost.
	Management bool
}

// Stack is a started stack.
type Stack struct {
	Gateways []*Gateway
	Backends []*Backend
	// Redis, Rabbit and Postgres are the private servers (nil for shared ones).
	Redis    *proc.Server
	Rabbit   *proc.Rabbit
	Postgres *proc.Server

	RedisAddr string
	AMQPURL   string // the run's vhost
	MgmtURL   string // RabbitMQ management API ("" when the private node has none)
	Vhost     string
	PGURL     string // the database the backends write
	Namespace string // SECKILL_NAMESPACE of the run's backends and gateways
	LogDir    string

	close []func()
}

// Gateway is one Caddy process of the stack.
type Gateway struct {
	*proc.Server
	URL     string // base URL of the moved :8080 site
	Admin   string // base URL of its Caddy admin endpoint
	Ceiling string // base URL of the added site that only does `respond`
}

// Backend is one seckill-backend process of the stack.
type Backend struct {
	*proc.Server
	URL      string // base URL of its admin listener (admin API, baselines, metrics, /healthz)
	Upstream string // host:port of its order API (the gateways' upstream)
}

// TrustLoopbackProxy is the global option a load generator on loopback needs: it says who each
// simulated client is with X-Forwarded-For, so {client_ip} (what per-IP throttle zones key on)
// is the simulated client, as behind a real load balancer.
const TrustLoopbackProxy = `	servers {
		trusted_proxies static 127.0.0.1/32 ::1/128
		trusted_proxies_strict
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

// Start starts the servers (private ones concurrently: RabbitMQ takes seconds), a vhost and a
// database of the run's own on them, then the backends one after the other, then the gateways,
// and waits until each answers. On error, what was started is stopped.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.Gateways <= 0 {
		o.Gateways = 1
	}
	if o.Backends <= 0 {
		o.Backends = 1
	}
	if o.Name == "" {
		o.Name = "stack"
	}
	s := &Stack{RedisAddr: o.RedisAddr, AMQPURL: o.AMQPURL, MgmtURL: o.MgmtURL}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "seckill-"+o.Name+"-"); err != nil {
			return nil, err
		}
		dir := o.Dir
		s.onClose(func() { _ = os.RemoveAll(dir) })
	}
	s.LogDir = o.LogDir
	if s.LogDir == "" {
		s.LogDir = o.Dir
	}
	for _, d := range []string{o.Dir, s.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	bin := o.BinDir
	if bin == "" {
		bin = filepath.Join(o.Dir, "bin")
		if err := Build(ctx, o.Root, bin); err != nil {
			return nil, err
		}
	}
	id := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	if err := s.startServers(ctx, o, id); err != nil {
		return nil, err
	}
	pgAdmin := o.PGAdminURL
	if s.Postgres != nil {
		pgAdmin = proc.PGURL(s.Postgres, "postgres")
	}
	if err := s.isolate(ctx, o.Name, id, pgAdmin); err != nil {
		return nil, err
	}

	// Each backend has two listeners: the order API (the gateways' upstream) and the admin API.
	ports, err := proc.FreePorts(2*o.Backends + 3*o.Gateways)
	if err != nil {
		return nil, err
	}
	var upstreams []string
	for i := 0; i < o.Backends; i++ {
		upstreams = append(upstreams, "127.0.0.1:"+strconv.Itoa(ports[2*i]))
	}
	gwPorts := ports[2*o.Backends:]
	// One namespace for the run's backends and gateways (the Caddyfile reads it): the backends
	// record it in the sales they preheat and the relays take only those, so a demo or another
	// stack on the same Redis never takes this one's winners.
	s.Namespace = o.Name + "-" + strconv.Itoa(gwPorts[0])
	env := append(os.Environ(),
		"SECKILL_REDIS_ADDR="+s.RedisAddr, "SECKILL_AMQP_URL="+s.AMQPURL, "SECKILL_PG_URL="+s.PGURL,
		"SECKILL_ADMIN_TOKEN="+o.AdminToken, "SECKILL_TOKEN_KEY="+o.TokenKey,
		// Every backend behind every gateway's /orders/ proxy ({$…} expands before parsing).
		"SECKILL_BACKEND="+strings.Join(upstreams, " "), "SECKILL_NAMESPACE="+s.Namespace)
	env = append(env, o.Env...)

	for i := 0; i < o.Backends; i++ {
		b := &Backend{Upstream: upstreams[i], URL: "http://127.0.0.1:" + strconv.Itoa(ports[2*i+1])}
		benv := append(append([]string{}, env...), "SECKILL_BACKEND_LISTEN="+b.Upstream,
			"SECKILL_BACKEND_ADMIN_LISTEN="+strings.TrimPrefix(b.URL, "http://"))
		b.Server = s.program(instance("backend", i, o.Backends), b.Upstream, filepath.Join(bin, "seckill-backend"), nil, benv, b.URL+"/healthz")
		s.Backends = append(s.Backends, b)
		if err := b.Start(ctx); err != nil {
			return nil, err
		}
	}

	cf := o.Caddyfile
	if cf == "" {
		cf = filepath.Join(o.Root, "Caddyfile")
	}
	src, err := os.ReadFile(cf)
	if err != nil {
		return nil, err
	}
	tmpl := string(src)
	if o.GateRelay != "" {
		if tmpl, err = withAppRelay(tmpl, o.GateRelay); err != nil {
			return nil, fmt.Errorf("%s: %w", cf, err)
		}
	}
	for i := 0; i < o.Gateways; i++ {
		site, admin, ceil := gwPorts[3*i], gwPorts[3*i+1], gwPorts[3*i+2]
		base := "http://127.0.0.1:" + strconv.Itoa(site)
		genv := env
		var conf string
		if o.ShopSite {
			conf, err = ShopGatewayConfig(tmpl, site, admin)
			conf += ceilingSite(ceil)
			genv = append(append([]string{}, env...), "SECKILL_SHOP_PUBLIC_URL="+base)
		} else {
			conf, err = GatewayConfig(tmpl, site, admin, ceil, o.ExtraGlobal)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cf, err)
		}
		name := instance("gateway", i, o.Gateways)
		path := filepath.Join(o.Dir, "Caddyfile."+name)
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			return nil, err
		}
		g := &Gateway{URL: base, Admin: "http://127.0.0.1:" + strconv.Itoa(admin),
			Ceiling: "http://127.0.0.1:" + strconv.Itoa(ceil)}
		// Ready when the ceiling answers: the Caddyfile's own site may have no route for "/".
		g.Server = s.program(name, "127.0.0.1:"+strconv.Itoa(site), filepath.Join(bin, "caddy"),
			[]string{"run", "--config", path, "--adapter", "caddyfile"}, genv, g.Ceiling+"/")
		s.Gateways = append(s.Gateways, g)
		if err := g.Start(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// instance names the i-th of n processes of a kind: "gateway" alone, "gateway-1"… of several.
func instance(kind string, i, n int) string {
	if n == 1 {
		return kind
	}
	return kind + "-" + strconv.Itoa(i+1)
}

// program is a backend or gateway of the stack: path with args, logging to LogDir/name.log
// (fresh for the run, continued across restarts). It gets SIGTERM, not SIGKILL, when the run
// dies, so it still shuts down cleanly.
func (s *Stack) program(name, addr, path string, args, env []string, readyURL string) *proc.Server {
	log := filepath.Join(s.LogDir, name+".log")
	_ = os.Remove(log)
	p := &proc.Server{Name: name, Addr: addr, Log: log, Ready: proc.HTTPReady(readyURL), StartTimeout: 60 * time.Second}
	p.Spawn = func(context.Context) (*proc.Process, error) {
		return proc.Start(proc.Spec{Path: path, Args: args, Env: env, Log: log, DeathSignal: syscall.SIGTERM})
	}
	s.onClose(func() { _ = p.Stop(context.Background()) })
	return p
}

// isolate gives the run a RabbitMQ vhost of its own (when a management API can create one; a
// private node without it has nobody else on it) and a Postgres database of its own.
func (s *Stack) isolate(ctx context.Context, name, id, pgAdmin string) error {
	if s.MgmtURL != "" {
		s.Vhost = name + "-" + id
		mg, err := rabbitmgmt.New(s.MgmtURL)
		if err != nil {
			return err
		}
		vhost := s.Vhost
		s.onClose(func() { _ = mg.DeleteVhost(context.Background(), vhost) })
		if err := mg.CreateVhost(ctx, vhost); err != nil {
			return fmt.Errorf("create RabbitMQ vhost: %w", err)
		}
		au, err := url.Parse(s.AMQPURL)
		if err != nil {
			return fmt.Errorf("AMQP URL: %w", err)
		}
		au.Path = "/" + vhost
		s.AMQPURL = au.String()
	}

	db := name + "_" + id
	admin, err := pgx.Connect(ctx, pgAdmin)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	_ = admin.Close(ctx)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	s.onClose(func() {
		c, err := pgx.Connect(context.Background(), pgAdmin)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	pu, err := url.Parse(pgAdmin)
	if err != nil {
		return fmt.Errorf("Postgres URL: %w", err)
	}
	pu.Path = "/" + db
	s.PGURL = pu.String()
	return nil
}

// URLs are the gateways' base URLs, by instance.
func (s *Stack) URLs() []string {
	var out []string
	for _, g := range s.Gateways {
		out = append(out, g.URL)
	}
	return out
}

func (s *Stack) onClose(f func()) { s.close = append(s.close, f) }

// Close stops what Start started, last started first (gateways, backends, then the vhost, the
// database and the private servers), and removes the temp dir it made.
func (s *Stack) Close() {
	for i := len(s.close) - 1; i >= 0; i-- {
		s.close[i]()
	}
	s.close = nil
}
