package backend

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func flagSet() *flag.FlagSet { return flag.NewFlagSet("child", flag.ContinueOnError) }

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
