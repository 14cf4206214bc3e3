// Command seckill-backend is the order service: it migrates the database, consumes winners
// from RabbitMQ, and serves the order API and the admin API (see backend.Config for settings).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckilledge/seckill/backend"
)

func main() {
	cfg, err := backend.ConfigFromFlags(flag.CommandLine, os.Args[1:])
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
