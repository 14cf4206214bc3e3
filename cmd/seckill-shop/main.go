// Command seckill-shop is the sample shop (package examples/shop) that `make run` puts behind
// the gateway's :8088 site: sign-in with a signed session cookie, the sales, the buyer's
// orders from the backend's webhooks, and payment confirmed to the backend.
//
// Settings: shop.Config (flags, or SECKILL_SHOP_* and SECKILL_WEBHOOK_SECRETS in the
// environment; the shop token and the webhook secret only from the environment).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seckilledge/seckill/examples/shop"
)

func main() {
	cfg, err := shop.ConfigFromFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill-shop:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "seckill-shop:", err)
		os.Exit(1)
	}
}

func run(cfg shop.Config) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	key, err := shop.LoadOrCreateKey(cfg.KeyFile)
	if err != nil {
		return err
	}
	s, err := shop.New(cfg, key, log)
	if err != nil {
		return err
	}
	// -demo was given (New refuses otherwise): say what it means, on the terminal and in the log.
	fmt.Fprintln(os.Stderr, "seckill-shop:", shop.DemoNotice)
	log.Warn(shop.DemoNotice)
	if cfg.KeyFile == "" {
		log.Warn("session key made in memory: every session ends with this process (set -key-file to keep it)")
	}
	if cfg.WebhookSecret == "" {
		log.Warn("no SECKILL_WEBHOOK_SECRETS: every webhook will be refused")
	}
	if cfg.ShopToken == "" {
		log.Warn("no SECKILL_SHOP_TOKEN: payments cannot be confirmed")
	}
	srv := &http.Server{Addr: cfg.Listen, Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 15 * time.Second, IdleTimeout: time.Minute}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("shop listening", "addr", cfg.Listen, "public_url", cfg.PublicURL, "kid", s.Sessions().KeyID(),
		"backend_admin", cfg.BackendAdmin, "sales", cfg.Sales)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
