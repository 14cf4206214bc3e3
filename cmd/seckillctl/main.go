// Command seckillctl is the operator's command line for the backend's admin API: list and
// inspect sales, create and preheat them, pause, resume, end, change stock, reconcile,
// rebalance, read the audit trail, watch a sale live, show and run a draw, and confirm a payment
// as the shop.
//
//	seckillctl [-url URL] [-token TOKEN] [-o table|json] COMMAND [ARGS]
//
// The admin URL and token come from the flags or from SECKILL_ADMIN_URL (default
// http://127.0.0.1:8082, the backend's admin listener) and SECKILL_ADMIN_TOKEN. Tables are for people; -o json prints the
// API's answers for scripts. The exit status is 0 on success, 1 when the backend refused or
// could not be reached (the refusal's code is printed), 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: seckillctl [-url URL] [-token TOKEN] [-o table|json] COMMAND [ARGS]

commands:
  sales                              every sale with its state
  status SALE                        stock in Redis and Postgres, buyers, queued, orders
  create -id ID -stock N [-starts T|-in D] [-ends T|-for D] [-pay-within D] [-shards K]
  preheat SALE                       load the sale into Redis
  pause SALE | resume SALE           stop / restart accepting on every gateway
  end SALE [-at RFC3339]             end now, or move the end to -at
  stock add|remove SALE N [-variant V] [-request-id ID]
                                     add (or remove unsold) units, of variant V on a sale with
                                     variants; idempotent per request id
  reconcile SALE | rebalance SALE    repair Redis from Postgres / even out a sharded sale
  audit [-sale SALE] [-limit N]      who did what, when
  watch SALE [-interval 1s]          a live view, refreshed every second (Ctrl-C ends it)
  pay ORDER                          confirm a payment (POST /shop/orders/ORDER/paid; a shop token)
  draw show SALE                     a draw sale's draw: entries per size, waves, claims
  draw run SALE                      close the entries (if still open) and draw now

environment: SECKILL_ADMIN_URL, SECKILL_ADMIN_TOKEN
`

// errUsage marks a usage error (exit status 2).
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckillctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	c := &cli{out: stdout}
	c.globalFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	err := c.dispatch(ctx, fs.Arg(0), fs.Args()[1:])
	var refusal *apiError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "seckillctl: %v\n\n%s", err, usage)
		return 2
	case errors.As(err, &refusal):
		fmt.Fprintf(stderr, "seckillctl: %s\n", refusal)
		return 1
	default:
		fmt.Fprintf(stderr, "seckillctl: %v\n", err)
		return 1
	}
}

// cli is one invocation: where the backend is, who we are, how to print.
type cli struct {
	url, token, output string
	out                io.Writer
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// globalFlags are accepted before the command and again after it.
func (c *cli) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", envOr("SECKILL_ADMIN_URL", "http://127.0.0.1:8082"), "the backend's admin API (SECKILL_ADMIN_URL)")
	fs.StringVar(&c.token, "token", os.Getenv("SECKILL_ADMIN_TOKEN"), "admin token (SECKILL_ADMIN_TOKEN); a shop token for pay")
	fs.StringVar(&c.output, "o", "table", "output: table or json")
}

// flags returns a command's flag set, which also takes the global flags.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.url, "url", c.url, "")
	fs.StringVar(&c.token, "token", c.token, "")
	fs.StringVar(&c.output, "o", c.output, "")
	return fs
}

// parse parses a command's arguments: want positional ones first, then flags.
func (c *cli) parse(fs *flag.FlagSet, args []string, want ...string) ([]string, error) {
	if len(args) < len(want) {
		return nil, fmt.Errorf("%w: %s needs %s", errUsage, fs.Name(), strings.Join(want, " "))
	}
	pos := args[:len(want)]
	for i, a := range pos {
		if strings.HasPrefix(a, "-") && want[i] != "N" {
			return nil, fmt.Errorf("%w: %s needs %s before its flags", errUsage, fs.Name(), strings.Join(want, " "))
		}
	}
	if err := fs.Parse(args[len(want):]); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: %s: unexpected %q", errUsage, fs.Name(), fs.Arg(0))
	}
	if c.output != "table" && c.output != "json" {
		return nil, fmt.Errorf("%w: -o must be table or json", errUsage)
	}
	return pos, nil
}
