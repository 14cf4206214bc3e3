package driver

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
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
	// GatewayPIDs and GatewayAdmins are every gateway's process id and Caddy admin URL, in the
	// order of Gateways, when Start ran them (the room's scale run reads each one's memory and
	// metrics).
	GatewayPIDs   []int
	GatewayAdmins []string
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

	h *harness.Stack
}

// Close stops what Start started and removes the vhost and database it created.
func (s *Stack) Close() {
	if s.h != nil {
		s.h.Close()
		s.h = nil
	}
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
	// RedisNoAOF runs the private Redis without its append-only file (the tail breakdown's
	// control run, -redis-aof=false).
	RedisNoAOF bool
	AMQPURL    string // broker URL (any vhost: Start puts its own vhost in it)
	MgmtURL    string
	PGAdminURL string // maintenance database URL, to create the bench database
	AdminToken string
	TokenKey   string
	// Env is extra environment for both processes (KEY=value).
	Env []string
	// LogDir receives gateway.log and backend.log (gateway-1.log… with several gateways;
	// default: a temp dir).
	LogDir string
	// Gateways is how many gateways to start (default 1), each its own Caddy process on its own
	// ports, sharing the backend's namespace, Redis and vhost.
	Gateways int
	// PrivateServices starts a RabbitMQ node and a Postgres cluster of the run's own (AMQPURL,
	// MgmtURL and PGAdminURL are then ignored): their CPU per request is this run's alone, and
	// pinning them moves nobody else's servers.
	PrivateServices bool
}

// Start builds (unless BinDir is set) and starts a backend and the gateways on free ports with
// a fresh RabbitMQ vhost and Postgres database (internal/harness), and waits until all answer.
func Start(ctx context.Context, o StartOptions) (*Stack, error) {
	h, err := harness.Start(ctx, harness.Options{Name: "bench", Root: o.Root, BinDir: o.BinDir, LogDir: o.LogDir,
		Caddyfile: o.Caddyfile, ExtraGlobal: o.ExtraGlobal, Gateways: o.Gateways,
		AdminToken: o.AdminToken, TokenKey: o.TokenKey, Env: append([]string{"SECKILL_BASELINES=1"}, o.Env...),
		RedisAddr: o.RedisAddr, PrivateRedis: o.PrivateRedis, RedisNoAOF: o.RedisNoAOF, AMQPURL: o.AMQPURL, MgmtURL: o.MgmtURL, PGAdminURL: o.PGAdminURL,
		PrivateServices: o.PrivateServices, Management: true})
	if err != nil {
		return nil, err
	}
	gw, be := h.Gateways[0], h.Backends[0]
	s := &Stack{Gateway: gw.URL, Gateways: h.URLs(), Backend: be.URL, Ceiling: gw.Ceiling, Admin: gw.Admin,
		AdminToken: o.AdminToken, RedisAddr: h.RedisAddr, PGURL: h.PGURL, MgmtURL: h.MgmtURL, Vhost: h.Vhost,
		GatewayPID: gw.PID(), BackendPID: be.PID(), LogDir: h.LogDir, h: h}
	for _, g := range h.Gateways {
		s.GatewayPIDs = append(s.GatewayPIDs, g.PID())
		s.GatewayAdmins = append(s.GatewayAdmins, g.Admin)
	}
	if h.Redis != nil {
		s.RedisPID = h.Redis.PID()
	}
	if o.PrivateServices {
		s.RabbitPID = h.Rabbit.PID() // rabbitmq-server's script; beam.smp is in its tree
		// pg_ctl daemonizes: the postmaster holds the port.
		s.PostgresPID = ListenerPID(urlPort(h.PGURL, 5432))
	} else {
		s.Shared = true
		s.RabbitPID, s.PostgresPID = ListenerPID(urlPort(o.AMQPURL, 5672)), ListenerPID(urlPort(o.PGAdminURL, 5432))
	}
	return s, nil
}

// AllGateways are the gateways' base URLs (the one Gateway when only it is known).
func (s *Stack) AllGateways() []string {
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

// StartProc starts a server of the stack; it gets SIGTERM, not SIGKILL, when the bench dies,
// so it still shuts down cleanly.
func StartProc(path string, args, env []string, logPath string) (*proc.Process, error) {
	_ = os.Remove(logPath) // a fresh log per run
	return proc.Start(proc.Spec{Path: path, Args: args, Env: env, Log: logPath, DeathSignal: syscall.SIGTERM})
}

// WaitHTTP waits until u answers with a status below 500.
func WaitHTTP(ctx context.Context, name string, p *proc.Process, u string) error {
	return proc.WaitReady(ctx, name+" at "+u, p, p.Log, 60*time.Second, proc.HTTPReady(u))
}
