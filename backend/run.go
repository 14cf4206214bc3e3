package backend

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Run migrates the database, then consumes winners, sweeps unpaid orders and serves the HTTP
// API until ctx ends. Shutdown stops taking messages, finishes the batch in hand and drains
// HTTP requests.
func Run(ctx context.Context, cfg Config) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if cfg.AdminToken == "" {
		return errors.New("SECKILL_ADMIN_TOKEN is not set: the admin API needs a token")
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

	comp := &Compensator{Pool: pool, Redis: rdb, Log: log}
	svc := &Service{Pool: pool, Redis: rdb, Locker: NewLocker(rdb, cfg.LockTTL), Compensator: comp, Log: log,
		AdminToken: cfg.AdminToken, Retention: cfg.Retention, Grace: cfg.ReconcileGrace, Namespace: cfg.Namespace}
	cons := &Consumer{URL: cfg.AMQPURL, Writer: &Writer{Pool: pool}, Compensator: comp,
		BatchSize: cfg.BatchSize, BatchWait: cfg.BatchWait, Writers: cfg.BatchWriters, Log: log}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc.Handler(newRegistry(), cfg.Baselines), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("backend listening", "addr", ln.Addr().String(), "baselines", cfg.Baselines, "batch_size", cfg.BatchSize)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = cons.Run(ctx) }()
	go func() { defer wg.Done(); svc.RunSweeper(ctx, cfg.SweepInterval) }()
	go func() { defer wg.Done(); svc.RunRebalancer(ctx) }()

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdown); err == nil {
		err = serr
	}
	wg.Wait()
	log.Info("backend stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
