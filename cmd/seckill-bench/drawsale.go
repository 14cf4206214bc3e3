package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/seckilledge/seckill/bench/drawcheck"
	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/draw"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runDrawSale is `seckill-bench draw-sale` (make demo-draw): a whole draw sale on a running
// stack (make run's by default), from the first entry to the last claim (draw.DrawSale), then
// every invariant of the sale (the draw's included) and verify-draw on what it published.
func runDrawSale(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench draw-sale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gateway := fs.String("gateway", "http://127.0.0.1:8080", "the gateway (X-User-ID identity)")
	backend := fs.String("backend", "http://127.0.0.1:8082", "the backend's admin API")
	adminToken := fs.String("admin-token", stackenv.Secret("SECKILL_ADMIN_TOKEN"), "admin token (default SECKILL_ADMIN_TOKEN)")
	pgURL := fs.String("pg", stackenv.PGURL(), "Postgres URL of the backend's database")
	redisAddr := fs.String("redis", stackenv.RedisAddr(), "Redis host:port")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	var o draw.DrawSaleOptions
	fs.IntVar(&o.Entrants, "entrants", 240, "entrants")
	fs.IntVar(&o.Sizes, "sizes", 3, "sizes")
	fs.IntVar(&o.Units, "units", 5, "units per size")
	fs.DurationVar(&o.Close, "close", 12*time.Second, "from now to the close of the entries")
	fs.DurationVar(&o.Claim, "claim", 3*time.Second, "each wave's claim window")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "[draw-sale] "+format+"\n", a...) }
	// Each entrant gets an address of his own, so a gateway that trusts a loopback proxy
	// throttles them apart (make run's :8080 only reports its IP zones anyway).
	o.Forward = func(user string) string { return fmt.Sprintf("10.77.%d.%d", len(user)%200, user[len(user)-1]) }
	stack := &driver.Stack{Gateway: *gateway, Backend: *backend, AdminToken: *adminToken, RedisAddr: *redisAddr, PGURL: *pgURL, MgmtURL: *mgmt, Vhost: "/"}
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		return errorf(stderr, "draw-sale: %v", err)
	}
	defer drv.Close()
	res, err := draw.DrawSale(ctx, drv, o)
	if err != nil {
		return errorf(stderr, "draw-sale: %v", err)
	}
	ok := len(res.Problems) == 0
	for _, p := range res.Problems {
		fmt.Fprintf(stdout, "FAIL  %s\n", p)
	}
	fmt.Fprintf(stdout, "draw sale %s: %d entries, winners by wave %v, %d units bought\n\n", res.Sale, res.Entries, res.WinnersByWave, res.Bought)
	rep := draw.VerifySale(ctx, drv, res.Sale, res.Accepted...)
	fmt.Fprint(stdout, rep.String())
	ok = ok && rep.OK()
	users := []string{}
	for u, v := range res.SizeOf {
		if v != "" && len(users) < 2 {
			users = append(users, u)
		}
	}
	dc, err := drawcheck.Verify(ctx, *gateway, res.Sale, users...)
	if err != nil {
		return errorf(stderr, "draw-sale: verify-draw: %v", err)
	}
	fmt.Fprintf(stdout, "\nverify-draw, from the published data alone:\n%s", dc.String())
	if !ok || !dc.OK() {
		fmt.Fprintln(stdout, "FAIL")
		return 1
	}
	fmt.Fprintln(stdout, "the draw sale ran from the first entry to the last claim; every invariant PASSes")
	return 0
}
