//go:build integration

package crowd_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/report"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/contract"
)

// The whole-system test of variants: 5 000 buyers across 8 variants with a limit of 2, random
// quantities, repeat clicks and returning buyers, through two gateways (this repository's
// Caddy and default Caddyfile), RabbitMQ and the backend into Postgres. No variant is
// oversold, no user holds more than 2 units, every invariant PASSes (per variant, in units),
// and the first variant to sell out does not stop the others.
func TestAVariantCrowdThroughTwoGatewaysKeepsEveryInvariantPerVariant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stack := startWholeStack(ctx, t, 2)
	if len(stack.Gateways) != 2 {
		t.Fatalf("%d gateways started, want 2", len(stack.Gateways))
	}
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()

	vc := crowd.DefaultVariantCrowd()
	o, err := crowd.RunVariants(ctx, drv, vc, crowd.Options{Model: load.Model{Connections: 32}, TokenConns: 32, DrainTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report.Text(&out, &crowd.Result{Date: time.Now(), Machine: driver.ThisMachine(), Stock: o.Stock, Contestants: []*crowd.Outcome{o.Outcome}})
	t.Log(out.String())
	for _, c := range o.Checks {
		t.Logf("%s %d. %s: %s", c.Verdict, c.N, c.Name, c.Detail)
	}
	for kind, m := range o.Rush.ByKind {
		t.Logf("%s clicks: %v", kind, m)
	}
	if !o.OK() {
		t.Fatalf("an invariant failed; logs in %s", filepath.Clean(stack.LogDir))
	}
	if !o.Drain.Settled || !o.Drain.StockSettled {
		t.Fatalf("the sale did not settle: %+v", o.Drain)
	}
	// The crowd asked for far more than the stock: every unit sold, none twice.
	var left int
	if err := drv.PG.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1`, o.Sale).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d units of %d left unsold with a crowd of %d", left, o.Stock, vc.Users)
	}
	if o.Rush.Outcomes["limit_reached"] == 0 {
		t.Errorf("no click was refused limit_reached: the crowd did not test the limit (%v)", o.Rush.Outcomes)
	}

	// The same guarantees on a sale sharded over 4 Redis keys, each holding part of every
	// variant (a smaller crowd: the point is the sharding, not the size).
	sharded := vc
	sharded.Users, sharded.Shards, sharded.Seed = 2000, 4, 19
	sharded.Stocks = []int{20, 40, 80, 120, 160, 200, 240, 280}
	so, err := crowd.RunVariants(ctx, drv, sharded, crowd.Options{Model: load.Model{Connections: 32}, TokenConns: 32, DrainTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(so.Verify.Checks, so.Checks...) {
		t.Logf("sharded: %s %d. %s: %s", c.Verdict, c.N, c.Name, c.Detail)
	}
	if !so.OK() || !so.Drain.Settled || !so.Drain.StockSettled {
		t.Fatalf("the sharded variant sale failed; logs in %s", filepath.Clean(stack.LogDir))
	}
	if k := drv.Redis.HGet(ctx, contract.MetaKey(so.Sale), contract.FieldShards).Val(); k != "4" {
		t.Fatalf("the sharded run's sale has shards=%q in Redis, want 4", k)
	}
	// Every unit sold here too: a buyer refused a variant his shard has run out of pulls that
	// variant's units from the other shards (the backend's rebalancer moves them per variant),
	// so none stays stranded on a shard whose buyers do not want it.
	if err := drv.PG.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1`, so.Sale).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		for _, id := range contract.ShardIDs(so.Sale, 4) {
			t.Logf("sharded: %s holds %v", id, drv.Redis.HGetAll(ctx, contract.MetaKey(id)).Val())
		}
		t.Errorf("sharded: %d units of %d left unsold with a crowd of %d", left, so.Stock, sharded.Users)
	}
}
