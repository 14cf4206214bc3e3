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

// The whole product, end to end: a small crowd (repeat clickers, bots, replayed and forged
// tokens, late arrivals) through the gateway built from this repository and its default
// Caddyfile (throttle, token, gate, relay), RabbitMQ and the backend's consumer into Postgres;
// then every invariant of DESIGN.md is checked. It tests correctness, not speed.
func TestACrowdThroughTheWholeStackKeepsEveryInvariant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stack := startWholeStack(ctx, t, 1)
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()

	people := crowd.Crowd{Users: 400, Repeaters: 0.3, Bots: 3, BotHits: 40, Replays: 40, Forged: 40, Late: 20, Seed: 7}
	opts := crowd.Options{Crowd: people, Stock: 100, Model: load.Model{Connections: 32}, TokenConns: 16, DrainTimeout: 30 * time.Second}
	edge, err := crowd.RunEdge(ctx, drv, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Model = load.Model{Connections: 16}
	optimistic, err := crowd.RunBaseline(ctx, drv, crowd.Optimistic, opts)
	if err != nil {
		t.Fatal(err)
	}
	res := &crowd.Result{Date: time.Now(), Machine: driver.ThisMachine(), Crowd: people, Stock: 100, Contestants: []*crowd.Outcome{optimistic, edge}}
	var out bytes.Buffer
	report.Text(&out, res)
	t.Log(out.String())
	if !res.OK() {
		t.Fatalf("an invariant failed; logs in %s", filepath.Clean(stack.LogDir))
	}
	if edge.Accepted != 100 || !edge.Drain.Settled {
		t.Fatalf("the edge accepted %d of 100 units (drain %v)", edge.Accepted, edge.Drain)
	}

	// The same crowd on a sale sharded over 4 Redis keys: every invariant still holds (one
	// unit per user, no oversell, no undersell once settled), the stock summed over the shards.
	opts.Model = load.Model{Connections: 32}
	opts.Shards = 4
	sharded, err := crowd.RunEdge(ctx, drv, opts)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	report.Text(&out, &crowd.Result{Date: time.Now(), Machine: driver.ThisMachine(), Crowd: people, Stock: 100, Contestants: []*crowd.Outcome{sharded}})
	if !sharded.OK() || sharded.Accepted != 100 || !sharded.Drain.Settled {
		t.Fatalf("the sharded sale failed (accepted %d of 100):\n%s", sharded.Accepted, out.String())
	}
	if k := drv.Redis.HGet(ctx, contract.MetaKey(sharded.Sale), contract.FieldShards).Val(); k != "4" {
		t.Fatalf("the sharded run's sale has shards=%q in Redis, want 4", k)
	}
	opts.Shards = 0

	// The sabotage check: the same stack, but the gate believes in 20 units Postgres does not
	// have (as it would with its stock check disabled). The verifier must catch it.
	opts.Model = load.Model{Connections: 32}
	opts.Sabotage = crowd.InflateRedisStock(20)
	opts.DrainTimeout = 5 * time.Second // Redis and Postgres will never agree: do not wait long
	bad, err := crowd.RunEdge(ctx, drv, opts)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	report.Text(&out, &crowd.Result{Date: time.Now(), Machine: driver.ThisMachine(), Crowd: people, Stock: 100, Contestants: []*crowd.Outcome{bad}})
	if bad.OK() {
		t.Fatalf("a gate that sold %d units of a 100-unit sale passed verification:\n%s", bad.Accepted, out.String())
	}
	t.Logf("sabotaged run, as expected:\n%s", out.String())
}
