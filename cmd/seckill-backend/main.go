// Command seckill-backend is the order service: it migrates the database, consumes winners
// from RabbitMQ, and serves the order API and the admin API (see backend.Config for settings).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/internal/version"
)

func main() {
	// -version answers before the settings are read, so it works with none of them set.
	flag.Bool("version", false, "print the version and exit")
	if slices.Contains(os.Args[1:], "-version") || slices.Contains(os.Args[1:], "--version") {
		fmt.Println(version.Read().String("seckill-backend"))
		return
	}
	cfg, err := config(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := backend.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "seckill-backend:", err)
		os.Exit(1)
	}
}

// config reads the settings from the flags and the environment, and traces the consumer's
// batch writes when the standard OTEL_* variables ask for it.
func config(fs *flag.FlagSet, args []string) (backend.Config, error) {
	cfg, err := backend.ConfigFromFlags(fs, args)
	cfg.NewTracerProvider = newTracerProvider
	return cfg, err
}
