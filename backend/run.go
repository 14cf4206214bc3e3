package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/seckilledge/seckill/backend/internal/schema"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/report"
	"github.com/seckilledge/seckill/backend/webhook"
)

// Run migrates the database, then consumes winners, sweeps unpaid orders and serves the HTTP
// API until ctx ends. Shutdown stops taking messages, finishes the batch in hand and drains
// HTTP requests.
func Run(ctx context.Context, cfg Config) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	tokens, err := ParseTokens(cfg.AdminTokens, cfg.AdminToken)
	if err != nil {
		return err
	}
	if tokens.Empty() {
		return errors.New("neither SECKILL_ADMIN_TOKENS nor SECKILL_ADMIN_TOKEN is set: the admin API needs a token")
	}
	// Webhook settings are checked before anything starts: a default receiver inside the
	// backend's network is a refusal to start, said at once.
	secrets, err := webhook.ParseSecrets(cfg.WebhookSecrets)
	if err != nil {
		return err
	}
	if cfg.WebhookAllowPrivate {
		log.Warn("SECKILL_WEBHOOK_ALLOW_PRIVATE=1 is deprecated: it allows every address inside but link-local and metadata; list the receiver's prefixes in SECKILL_WEBHOOK_ALLOW_CIDRS instead")
	}
	var hooks *webhook.Worker
	switch {
	case len(secrets) > 0:
		hooks = &webhook.Worker{Log: log, DefaultURL: cfg.WebhookURL, Secrets: secrets, Timeout: cfg.WebhookTimeout,
			RetryMin: cfg.WebhookRetryMin, RetryMax: cfg.WebhookRetryMax, MaxAttempts: cfg.WebhookAttempts,
			Concurrency: cfg.WebhookConcurrency, Allow: cfg.WebhookAllow}
		if cfg.WebhookURL != "" {
			if err := hooks.CheckURL(ctx, cfg.WebhookURL); err != nil {
				return fmt.Errorf("SECKILL_WEBHOOK_URL: %w", err)
			}
		}
	case cfg.WebhookURL != "":
		return errors.New("SECKILL_WEBHOOK_URL is set but SECKILL_WEBHOOK_SECRETS is not: webhooks must be signed")
	}
	drand, beacon, err := cfg.DrandConfig()
	if err != nil {
		return err
	}
	// Postgres may come up after the backend (compose, a restart of both): wait for it.
	for attempt := 1; ; attempt++ {
		err := Migrate(ctx, cfg.PGURL)
		if err == nil {
			break
		}
		if attempt == 30 || ctx.Err() != nil {
			return err
		}
		log.Warn("database not ready; retrying", "err", err, "attempt", attempt)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	pcfg, err := pgxpool.ParseConfig(cfg.PGURL)
	if err != nil {
		return err
	}
	if cfg.PGMaxConns > 0 {
		pcfg.MaxConns = int32(cfg.PGMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	rdb := newRedisClient(cfg.RedisAddr, os.Getenv("SECKILL_REDIS_PASSWORD"))
	defer rdb.Close()

	if hooks != nil {
		hpool, err := webhook.NewPool(ctx, cfg.PGURL, min(cfg.WebhookConcurrency, 8)+2)
		if err != nil {
			return err
		}
		defer hpool.Close()
		hooks.Pool = hpool
	}

	reportKey, err := report.ParseKey(os.Getenv("SECKILL_REPORT_KEY"))
	if err != nil {
		return err
	}
	comp := &orders.Compensator{Pool: pool, Redis: rdb, Log: log}
	if cfg.WaitlistWindow > 0 {
		comp.Waitlist = &orders.Waitlist{Pool: pool, Redis: rdb, Log: log, Webhooks: hooks, Window: cfg.WaitlistWindow,
			AnyWaiter: !cfg.WaitlistPresence}
	}
	// Every part is built here, once (New), and wired there.
	svc := New(Options{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, cfg.LockTTL), Compensator: comp, Log: log,
		Tokens: tokens, Retention: cfg.Retention, Grace: cfg.ReconcileGrace, Webhooks: hooks, Namespace: cfg.Namespace,
		Drand: drand, Beacon: beacon, ReportKey: reportKey})
	cons := &orders.Consumer{URL: cfg.AMQPURL, Writer: &orders.Writer{Pool: pool, DefaultWebhook: hooks.HasDefaultURL()}, Compensator: comp,
		BatchSize: cfg.BatchSize, BatchWait: cfg.BatchWait, Writers: cfg.BatchWriters, Log: log, Written: hooks.Wake}

	var tp *sdktrace.TracerProvider
	if cfg.NewTracerProvider != nil {
		if tp, err = cfg.NewTracerProvider(ctx); err != nil {
			return fmt.Errorf("OpenTelemetry (OTEL_* variables): %w", err)
		}
	}
	if tp != nil {
		cons.Tracer = tp.Tracer(orders.TracerName)
		defer func() {
			// Flushes the spans still batched; bounded, an unreachable collector must not hold
			// the exit.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tp.Shutdown(sctx)
		}()
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	aln, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		ln.Close()
		return err
	}
	hosts, err := AdminHostNames(cfg.AdminHosts, cfg.AdminListen, aln.Addr().String())
	if err != nil {
		ln.Close()
		aln.Close()
		return err
	}
	orderSrv := newServer(svc.OrderHandler(), orderLimits)
	admin := newServer(hostGuard(hosts, svc.Handler(NewMetricsRegistry(), cfg.Baselines)), adminLimits)
	errc := make(chan error, 2)
	go func() { errc <- orderSrv.Serve(ln) }()
	go func() { errc <- admin.Serve(aln) }()
	log.Info("backend listening", "orders", ln.Addr().String(), "admin", aln.Addr().String(), "admin_hosts", hosts, "baselines", cfg.Baselines,
		"batch_size", cfg.BatchSize, "webhooks", hooks != nil, "default_webhook", cfg.WebhookURL != "", "tracing", tp != nil)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(3)
	if hooks != nil {
		wg.Add(1)
		go func() { defer wg.Done(); hooks.Run(ctx) }()
	}
	go func() { defer wg.Done(); _ = cons.Run(ctx) }()
	go func() { defer wg.Done(); svc.Sweeper.Run(ctx, cfg.SweepInterval) }()
	go func() { defer wg.Done(); svc.Sales.RunRebalancer(ctx) }()
	// The fairness reports: each sale's, a little after its end.
	wg.Add(1)
	go func() { defer wg.Done(); svc.Reports.Run(ctx, 5*time.Second) }()
	// The draws: each at its close, then its waves as their claim windows end.
	wg.Add(1)
	go func() { defer wg.Done(); svc.Draws.RunLoop(ctx, drawInterval) }()

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if serr := orderSrv.Shutdown(shutdown); err == nil {
		err = serr
	}
	if serr := admin.Shutdown(shutdown); err == nil {
		err = serr
	}
	wg.Wait()
	log.Info("backend stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// drawInterval is the draw loop's period: a draw starts within it of closes_at, and a wave
// within it of the previous wave's claim_until.
const drawInterval = time.Second

// Migrate brings the database at url to the newest schema (backend/internal/schema). It is safe
// to run from several backend instances at once.
func Migrate(ctx context.Context, url string) error { return schema.Migrate(ctx, url) }

// SchemaDigest is a hex digest of the migrations Migrate runs (names and contents): two
// databases Migrate brought to the same digest have the same schema. Tests key their
// template database on it (testenv.PostgresFrom).
func SchemaDigest() string { return schema.Digest() }

// newRedisClient connects to one Redis at addr, or to a Redis Cluster when addr is a
// comma-separated list of seeds (a sharded sale spreads over the cluster's masters; every
// script of the backend touches one hash slot, so all of it runs there unchanged).
func newRedisClient(addr, password string) redis.UniversalClient {
	if seeds := strings.Split(addr, ","); len(seeds) > 1 {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Password: password})
	}
	return redis.NewClient(&redis.Options{Addr: addr, Password: password})
}
