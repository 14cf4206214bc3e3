package backend

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config is the backend's configuration. Every field has a flag and an environment variable;
// the flag wins. Secrets (the admin token, passwords inside URLs) belong in the environment.
type Config struct {
	Listen         string        // SECKILL_BACKEND_LISTEN, -listen: order API and admin API
	PGURL          string        // SECKILL_PG_URL, -pg
	PGMaxConns     int           // SECKILL_PG_MAX_CONNS, -pg-max-conns
	RedisAddr      string        // SECKILL_REDIS_ADDR, -redis
	AMQPURL        string        // SECKILL_AMQP_URL, -amqp
	AdminToken     string        // SECKILL_ADMIN_TOKEN (environment only)
	BatchSize      int           // SECKILL_BATCH_SIZE, -batch-size
	BatchWait      time.Duration // SECKILL_BATCH_WAIT, -batch-wait
	BatchWriters   int           // SECKILL_BATCH_WRITERS, -batch-writers: batches written at once
	SweepInterval  time.Duration // SECKILL_SWEEP_INTERVAL, -sweep-interval: unpaid-order sweeper period
	ReconcileGrace time.Duration // SECKILL_RECONCILE_GRACE, -reconcile-grace
	LockTTL        time.Duration // SECKILL_LOCK_TTL, -lock-ttl: lease of the distributed lock
	Retention      time.Duration // SECKILL_REDIS_RETENTION, -redis-retention: sale keys live this long after the sale ends
	Baselines      bool          // SECKILL_BASELINES, -baselines: the naive benchmark endpoints
	Namespace      string        // SECKILL_NAMESPACE, -namespace: deployment recorded in preheated sales (gateways relay their own)
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
	fs.StringVar(&c.Listen, "listen", getenv("SECKILL_BACKEND_LISTEN", "127.0.0.1:8081"), "address of the order and admin API (SECKILL_BACKEND_LISTEN)")
	fs.StringVar(&c.PGURL, "pg", getenv("SECKILL_PG_URL", "postgres://seckill:seckill@127.0.0.1:15432/seckill?sslmode=disable"), "Postgres URL (SECKILL_PG_URL)")
	num(&c.PGMaxConns, "pg-max-conns", "SECKILL_PG_MAX_CONNS", 16, "Postgres pool size")
	fs.StringVar(&c.RedisAddr, "redis", getenv("SECKILL_REDIS_ADDR", "127.0.0.1:16379"), "Redis host:port, or a comma-separated list of Redis Cluster seeds (SECKILL_REDIS_ADDR)")
	fs.StringVar(&c.AMQPURL, "amqp", getenv("SECKILL_AMQP_URL", "amqp://guest:guest@127.0.0.1:16672/"), "RabbitMQ URL (SECKILL_AMQP_URL)")
	num(&c.BatchSize, "batch-size", "SECKILL_BATCH_SIZE", 500, "orders per database transaction")
	num(&c.BatchWriters, "batch-writers", "SECKILL_BATCH_WRITERS", 3, "batches written at once, each in its own transaction")
	dur(&c.BatchWait, "batch-wait", "SECKILL_BATCH_WAIT", "20ms", "longest wait before a partial batch is written")
	dur(&c.SweepInterval, "sweep-interval", "SECKILL_SWEEP_INTERVAL", "1s", "period of the unpaid-order sweeper")
	dur(&c.ReconcileGrace, "reconcile-grace", "SECKILL_RECONCILE_GRACE", "1m", "age after which reconcile declares a buyer without an order lost")
	dur(&c.LockTTL, "lock-ttl", "SECKILL_LOCK_TTL", "10s", "lease of the distributed lock (refreshed while held)")
	dur(&c.Retention, "redis-retention", "SECKILL_REDIS_RETENTION", "24h", "how long a sale's Redis keys outlive the sale")
	fs.StringVar(&c.Namespace, "namespace", getenv("SECKILL_NAMESPACE", ""), "deployment namespace recorded in the sales it preheats; only gateways of the same namespace relay their orders (SECKILL_NAMESPACE)")
	fs.BoolVar(&c.Baselines, "baselines", os.Getenv("SECKILL_BASELINES") == "1", "serve the naive benchmark baselines (SECKILL_BASELINES=1)")
	c.AdminToken = os.Getenv("SECKILL_ADMIN_TOKEN")
	if err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		return c, fmt.Errorf("batch size %d: want 1..10000", c.BatchSize)
	}
	if c.BatchWriters < 1 || c.BatchWriters > 16 {
		return c, fmt.Errorf("batch writers %d: want 1..16", c.BatchWriters)
	}
	return c, nil
}
