package backend

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/seckilledge/seckill/backend/draw"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/egress"
)

// Config is the backend's configuration. Every field has a flag and an environment variable;
// the flag wins. Secrets (the admin token, passwords inside URLs) belong in the environment.
type Config struct {
	Listen        string        // SECKILL_BACKEND_LISTEN, -listen: the order API (the gateway proxies /orders/ here)
	AdminListen   string        // SECKILL_BACKEND_ADMIN_LISTEN, -admin-listen: admin API, shop API, metrics
	AdminHosts    string        // SECKILL_ADMIN_HOSTS, -admin-hosts: Host names the admin listener answers (AdminHostNames)
	PGURL         string        // SECKILL_PG_URL, -pg
	PGMaxConns    int           // SECKILL_PG_MAX_CONNS, -pg-max-conns
	RedisAddr     string        // SECKILL_REDIS_ADDR, -redis
	AMQPURL       string        // SECKILL_AMQP_URL, -amqp
	AdminToken    string        // SECKILL_ADMIN_TOKEN (environment only): one token, role admin, named "admin"
	AdminTokens   string        // SECKILL_ADMIN_TOKENS (environment only): name:token:role,...
	BatchSize     int           // SECKILL_BATCH_SIZE, -batch-size
	BatchWait     time.Duration // SECKILL_BATCH_WAIT, -batch-wait: longest an order waits for company while a batch is written
	BatchWriters  int           // SECKILL_BATCH_WRITERS, -batch-writers: batches written at once
	SweepInterval time.Duration // SECKILL_SWEEP_INTERVAL, -sweep-interval: unpaid-order sweeper period
	// The waitlist of the room sales (docs/room.md, "The waitlist"): how long an offered waiter
	// may buy (SECKILL_WAITLIST_WINDOW, -waitlist-window; 0: no waitlist, a released unit goes
	// back to the open pool), and whether an offer needs the waiter present
	// (SECKILL_WAITLIST_PRESENCE, -waitlist-presence; off for gateways whose presence_window is
	// off).
	WaitlistWindow   time.Duration
	WaitlistPresence bool
	ReconcileGrace   time.Duration // SECKILL_RECONCILE_GRACE, -reconcile-grace
	LockTTL          time.Duration // SECKILL_LOCK_TTL, -lock-ttl: lease of the distributed lock
	Retention        time.Duration // SECKILL_REDIS_RETENTION, -redis-retention: sale keys live this long after the sale ends
	Baselines        bool          // SECKILL_BASELINES, -baselines: the naive benchmark endpoints
	// SECKILL_LOG_LEVEL, -log-level: the least severe record logged (debug, info, warn, error;
	// default info), parsed into LogLevel by ConfigFromFlags.
	LogLevelName string
	LogLevel     slog.Level
	// Webhooks to the shop (docs/backend.md, "Webhooks").
	WebhookURL         string        // SECKILL_WEBHOOK_URL, -webhook-url: default receiver of order events
	WebhookSecrets     string        // SECKILL_WEBHOOK_SECRETS (environment only): signing secrets, new,old
	WebhookTimeout     time.Duration // SECKILL_WEBHOOK_TIMEOUT, -webhook-timeout: one attempt
	WebhookRetryMin    time.Duration // SECKILL_WEBHOOK_RETRY_MIN, -webhook-retry-min: first backoff
	WebhookRetryMax    time.Duration // SECKILL_WEBHOOK_RETRY_MAX, -webhook-retry-max: longest backoff
	WebhookAttempts    int           // SECKILL_WEBHOOK_MAX_ATTEMPTS, -webhook-max-attempts: then dead
	WebhookConcurrency int           // SECKILL_WEBHOOK_CONCURRENCY, -webhook-concurrency: requests in flight
	Namespace          string        // SECKILL_NAMESPACE, -namespace: deployment recorded in preheated sales (gateways relay their own)
	// SECKILL_WEBHOOK_ALLOW_CIDRS, -webhook-allow-cidrs: the prefixes inside (loopback,
	// private...) webhook URLs may point at, comma-separated (make run: 127.0.0.1/32); any
	// other address inside is refused at create, at start-up and at dial. Link-local and cloud
	// metadata addresses are refused whatever it lists.
	WebhookAllowCIDRs string
	// SECKILL_WEBHOOK_ALLOW_PRIVATE=1, -webhook-allow-private: deprecated, the allow list
	// 0.0.0.0/0,::/0 (every address inside but link-local and metadata); use
	// SECKILL_WEBHOOK_ALLOW_CIDRS.
	WebhookAllowPrivate bool
	// The draws' public beacon (docs/draw.md, "A public beacon"). DrandURLs (SECKILL_DRAND_URLS,
	// -drand-urls): comma-separated drand HTTP endpoints, tried in order; empty: no beacon, new
	// draws are commit-reveal only. The chain every new draw names unless its spec names
	// another: DrandChainHash (SECKILL_DRAND_CHAIN_HASH, -drand-chain-hash; default quicknet's
	// when URLs are given), and for a chain other than quicknet its DrandPublicKey
	// (SECKILL_DRAND_PUBLIC_KEY, hex G2), DrandPeriod (SECKILL_DRAND_PERIOD, seconds) and
	// DrandGenesis (SECKILL_DRAND_GENESIS, Unix seconds). The key is configured, never read
	// from an endpoint: the endpoints are trusted for nothing.
	DrandURLs      string
	DrandChainHash string
	DrandPublicKey string
	DrandPeriod    string
	DrandGenesis   string
	// WebhookAllow is WebhookAllowCIDRs (and the deprecated switch) parsed by ConfigFromFlags.
	WebhookAllow []netip.Prefix

	// NewTracerProvider, when set, builds the OpenTelemetry tracer provider the consumer's
	// "batch write" spans go to; it may return nil (tracing off). The seckill-backend command
	// sets it to a provider built from the standard OTEL_* variables.
	// It is a setting rather than a call inside Run so that the exporters it may pick (OTLP
	// over gRPC or HTTP) are linked into the binary only, not into every program and test
	// binary that links this package. Nil: no tracing.
	NewTracerProvider func(context.Context) (*sdktrace.TracerProvider, error)
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ConfigFromFlags reads the environment, then the command line.
func ConfigFromFlags(fs *flag.FlagSet, args []string) (Config, error) {
	var c Config
	var err error
	dur := func(p *time.Duration, name, env, def, usage string) {
		d, e := time.ParseDuration(getenv(env, def))
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", env, e)
		}
		fs.DurationVar(p, name, d, usage+" ("+env+")")
	}
	num := func(p *int, name, env string, def int, usage string) {
		n, e := strconv.Atoi(getenv(env, strconv.Itoa(def)))
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", env, e)
		}
		fs.IntVar(p, name, n, usage+" ("+env+")")
	}
	fs.StringVar(&c.Listen, "listen", getenv("SECKILL_BACKEND_LISTEN", "127.0.0.1:8081"), "address of the order API, proxied by the gateway (SECKILL_BACKEND_LISTEN)")
	fs.StringVar(&c.AdminListen, "admin-listen", getenv("SECKILL_BACKEND_ADMIN_LISTEN", "127.0.0.1:8082"), "address of the admin API, the shop API and /metrics; keep it private (SECKILL_BACKEND_ADMIN_LISTEN)")
	fs.StringVar(&c.AdminHosts, "admin-hosts", os.Getenv("SECKILL_ADMIN_HOSTS"), "comma-separated host names (name:port, or name for any port) the admin listener answers; default its listen host, localhost, 127.0.0.1 and [::1] with its port (SECKILL_ADMIN_HOSTS)")
	fs.StringVar(&c.PGURL, "pg", getenv("SECKILL_PG_URL", "postgres://seckill:seckill@127.0.0.1:15432/seckill?sslmode=disable"), "Postgres URL (SECKILL_PG_URL)")
	num(&c.PGMaxConns, "pg-max-conns", "SECKILL_PG_MAX_CONNS", 16, "Postgres pool size")
	fs.StringVar(&c.RedisAddr, "redis", getenv("SECKILL_REDIS_ADDR", "127.0.0.1:16379"), "Redis host:port, or a comma-separated list of Redis Cluster seeds (SECKILL_REDIS_ADDR)")
	fs.StringVar(&c.AMQPURL, "amqp", getenv("SECKILL_AMQP_URL", "amqp://guest:guest@127.0.0.1:16672/"), "RabbitMQ URL (SECKILL_AMQP_URL)")
	num(&c.BatchSize, "batch-size", "SECKILL_BATCH_SIZE", 500, "orders per database transaction")
	num(&c.BatchWriters, "batch-writers", "SECKILL_BATCH_WRITERS", 3, "batches written at once, each in its own transaction")
	dur(&c.BatchWait, "batch-wait", "SECKILL_BATCH_WAIT", "2ms", "longest an order waits for company while a batch is being written; with none in flight it is written at once")
	dur(&c.SweepInterval, "sweep-interval", "SECKILL_SWEEP_INTERVAL", "1s", "period of the unpaid-order sweeper")
	dur(&c.WaitlistWindow, "waitlist-window", "SECKILL_WAITLIST_WINDOW", "2m", "how long a room waiter offered a released unit may buy it; 0: no waitlist")
	fs.BoolVar(&c.WaitlistPresence, "waitlist-presence", os.Getenv("SECKILL_WAITLIST_PRESENCE") != "0", "offer released units only to waiters present now, as the gateways' presence rule (SECKILL_WAITLIST_PRESENCE=0: to every waiter in turn)")
	dur(&c.ReconcileGrace, "reconcile-grace", "SECKILL_RECONCILE_GRACE", "1m", "age after which reconcile declares a buyer without an order lost")
	dur(&c.LockTTL, "lock-ttl", "SECKILL_LOCK_TTL", "10s", "lease of the distributed lock (refreshed while held)")
	dur(&c.Retention, "redis-retention", "SECKILL_REDIS_RETENTION", "24h", "how long a sale's Redis keys outlive the sale")
	fs.StringVar(&c.Namespace, "namespace", getenv("SECKILL_NAMESPACE", ""), "deployment namespace recorded in the sales it preheats; only gateways of the same namespace relay their orders (SECKILL_NAMESPACE)")
	fs.BoolVar(&c.Baselines, "baselines", os.Getenv("SECKILL_BASELINES") == "1", "serve the naive benchmark baselines (SECKILL_BASELINES=1)")
	fs.StringVar(&c.WebhookURL, "webhook-url", os.Getenv("SECKILL_WEBHOOK_URL"), "default receiver of order events, for sales without their own webhook_url (SECKILL_WEBHOOK_URL)")
	dur(&c.WebhookTimeout, "webhook-timeout", "SECKILL_WEBHOOK_TIMEOUT", "10s", "timeout of one webhook attempt")
	dur(&c.WebhookRetryMin, "webhook-retry-min", "SECKILL_WEBHOOK_RETRY_MIN", "1s", "backoff after a webhook's first failed attempt (doubling, with jitter)")
	dur(&c.WebhookRetryMax, "webhook-retry-max", "SECKILL_WEBHOOK_RETRY_MAX", "10m", "longest backoff between webhook attempts")
	num(&c.WebhookAttempts, "webhook-max-attempts", "SECKILL_WEBHOOK_MAX_ATTEMPTS", 15, "webhook attempts before the event is parked dead")
	num(&c.WebhookConcurrency, "webhook-concurrency", "SECKILL_WEBHOOK_CONCURRENCY", 16, "webhook requests in flight per instance")
	fs.StringVar(&c.WebhookAllowCIDRs, "webhook-allow-cidrs", os.Getenv("SECKILL_WEBHOOK_ALLOW_CIDRS"),
		"prefixes inside (loopback, private) webhook URLs may point at, e.g. 127.0.0.1/32; never link-local or metadata (SECKILL_WEBHOOK_ALLOW_CIDRS)")
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", os.Getenv("SECKILL_WEBHOOK_ALLOW_PRIVATE") == "1",
		"deprecated: -webhook-allow-cidrs 0.0.0.0/0,::/0 (link-local and metadata stay refused) (SECKILL_WEBHOOK_ALLOW_PRIVATE=1)")
	fs.StringVar(&c.DrandURLs, "drand-urls", os.Getenv("SECKILL_DRAND_URLS"), "comma-separated drand HTTP endpoints for the draws' public beacon; empty: draws are commit-reveal only (SECKILL_DRAND_URLS)")
	fs.StringVar(&c.DrandChainHash, "drand-chain-hash", os.Getenv("SECKILL_DRAND_CHAIN_HASH"), "drand chain new draws name (default quicknet's when -drand-urls is set) (SECKILL_DRAND_CHAIN_HASH)")
	fs.StringVar(&c.DrandPublicKey, "drand-public-key", os.Getenv("SECKILL_DRAND_PUBLIC_KEY"), "that chain's public key, hex (built in for quicknet) (SECKILL_DRAND_PUBLIC_KEY)")
	fs.StringVar(&c.DrandPeriod, "drand-period", os.Getenv("SECKILL_DRAND_PERIOD"), "that chain's period in seconds (built in for quicknet) (SECKILL_DRAND_PERIOD)")
	fs.StringVar(&c.DrandGenesis, "drand-genesis", os.Getenv("SECKILL_DRAND_GENESIS"), "that chain's genesis, Unix seconds (built in for quicknet) (SECKILL_DRAND_GENESIS)")
	fs.StringVar(&c.LogLevelName, "log-level", getenv("SECKILL_LOG_LEVEL", "info"), "the least severe log record written: debug, info, warn or error (SECKILL_LOG_LEVEL)")
	c.WebhookSecrets = os.Getenv("SECKILL_WEBHOOK_SECRETS")
	c.AdminToken = os.Getenv("SECKILL_ADMIN_TOKEN")
	c.AdminTokens = os.Getenv("SECKILL_ADMIN_TOKENS")
	if err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(c.LogLevelName)); err != nil {
		return c, fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevelName)
	}
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		return c, fmt.Errorf("batch size %d: want 1..10000", c.BatchSize)
	}
	if c.Listen == c.AdminListen {
		return c, fmt.Errorf("the order listener and the admin listener are both %s: the admin API must not be reachable where the gateway proxies", c.Listen)
	}
	if c.WebhookAttempts < 1 || c.WebhookConcurrency < 1 || c.WebhookConcurrency > 256 {
		return c, fmt.Errorf("webhook max attempts %d (want >= 1), concurrency %d (want 1..256)", c.WebhookAttempts, c.WebhookConcurrency)
	}
	if c.BatchWriters < 1 || c.BatchWriters > 16 {
		return c, fmt.Errorf("batch writers %d: want 1..16", c.BatchWriters)
	}
	allow, err := egress.ParseAllow(c.WebhookAllowCIDRs)
	if err != nil {
		return c, fmt.Errorf("SECKILL_WEBHOOK_ALLOW_CIDRS: %w", err)
	}
	if c.WebhookAllowPrivate {
		allow = append(allow, egress.AllowInside...)
	}
	c.WebhookAllow = allow
	return c, nil
}

// DrandConfig reads the draws' beacon settings (Config.Drand*; docs/draw.md, "A public
// beacon"): the endpoints, and the chain new draws name by default (nil without endpoints).
// A chain hash other than quicknet's needs its public key, period and genesis; quicknet's
// are built in, and given ones must match them.
func (c Config) DrandConfig() (*draw.Drand, *drawmath.Beacon, error) {
	urls, err := draw.ParseDrandURLs(c.DrandURLs)
	if err != nil {
		return nil, nil, err
	}
	if len(urls) == 0 {
		if c.DrandChainHash != "" || c.DrandPublicKey != "" {
			return nil, nil, errors.New("SECKILL_DRAND_CHAIN_HASH / SECKILL_DRAND_PUBLIC_KEY need SECKILL_DRAND_URLS: without an endpoint no round could be fetched")
		}
		return nil, nil, nil
	}
	chain := drawmath.Quicknet
	if c.DrandChainHash != "" && c.DrandChainHash != chain.ChainHash {
		chain = drawmath.Beacon{ChainHash: c.DrandChainHash, Scheme: drawmath.SchemeUnchainedG1}
		if c.DrandPublicKey == "" || c.DrandPeriod == "" || c.DrandGenesis == "" {
			return nil, nil, errors.New("SECKILL_DRAND_CHAIN_HASH names a chain other than quicknet: give SECKILL_DRAND_PUBLIC_KEY, SECKILL_DRAND_PERIOD and SECKILL_DRAND_GENESIS too")
		}
	}
	given := chain
	if c.DrandPublicKey != "" {
		given.PublicKey = c.DrandPublicKey
	}
	if c.DrandPeriod != "" {
		if given.Period, err = strconv.Atoi(c.DrandPeriod); err != nil {
			return nil, nil, fmt.Errorf("SECKILL_DRAND_PERIOD: %w", err)
		}
	}
	if c.DrandGenesis != "" {
		if given.GenesisTime, err = strconv.ParseInt(c.DrandGenesis, 10, 64); err != nil {
			return nil, nil, fmt.Errorf("SECKILL_DRAND_GENESIS: %w", err)
		}
	}
	if chain.ChainHash == drawmath.Quicknet.ChainHash && given != chain {
		return nil, nil, errors.New("SECKILL_DRAND_*: the public key, period or genesis given are not quicknet's")
	}
	if err := given.ValidateChain(); err != nil {
		return nil, nil, fmt.Errorf("SECKILL_DRAND_*: %w", err)
	}
	return &draw.Drand{URLs: urls}, &given, nil
}
