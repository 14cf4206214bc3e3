//go:build integration

package sales_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// variantsOnShards reads each shard's units of each variant, checking that every shard's
// stock is the sum of its variants'.
func variantsOnShards(t testing.TB, e *servicetest.Env, sale string, k int) []map[string]int64 {
	t.Helper()
	out := make([]map[string]int64, k)
	for i, id := range contract.ShardIDs(sale, k) {
		meta := e.Redis.HGetAll(context.Background(), contract.MetaKey(id)).Val()
		out[i] = map[string]int64{}
		var sum int64
		for f, val := range meta {
			if v, ok := strings.CutPrefix(f, contract.VariantFieldPrefix); ok {
				n, _ := strconv.ParseInt(val, 10, 64)
				out[i][v] = n
				sum += n
			}
		}
		if stock, _ := strconv.ParseInt(meta[contract.FieldStock], 10, 64); stock != sum {
			t.Errorf("shard %s: stock %d, its variants hold %d (%v)", id, stock, sum, meta)
		}
	}
	return out
}

// buyVariantOnShard runs the real gate script on the user's shard; it returns the reply.
func buyVariantOnShard(t testing.TB, e *servicetest.Env, sale string, k int, user, variant string, q int) []any {
	t.Helper()
	reply, err := lua.GateCall{Sale: contract.UserShardID(sale, user, k), User: user, OrderID: uuid.Must(uuid.NewV7()).String(),
		Group: "relay", Variant: variant, Quantity: q}.Run(context.Background(), e.Redis)
	if err != nil {
		t.Errorf("gate script: %v", err)
		return []any{int64(-1)}
	}
	return reply
}

func journalsEmpty(t testing.TB, e *servicetest.Env, sale string, k int) {
	t.Helper()
	for _, id := range contract.ShardIDs(sale, k) {
		if n := e.Redis.HLen(context.Background(), contract.MovesKey(id)).Val(); n != 0 {
			t.Errorf("shard %s still journals %d moves", id, n)
		}
	}
}

// (a) The admin rebalance of a sharded variant sale evens out every variant on its own: the
// moves name their variant, each shard's stock stays the sum of its variants', no unit is
// created or lost, and a variant with fewer units than shards stays where it is.
func TestRebalanceOfAShardedVariantSaleEvensOutEachVariant(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k = 3
	sale := e.ShardedVariantSale(k, 2, backend.VariantSpec{ID: "a", Stock: 9}, backend.VariantSpec{ID: "b", Stock: 6}, backend.VariantSpec{ID: "c", Stock: 1})
	e.PlaceVariants(sale, []map[string]int{{"a": 9, "b": 0, "c": 1}, {"a": 0, "b": 6, "c": 0}, {"a": 0, "b": 0, "c": 0}})

	rep, err := e.Svc.Sales.Rebalance(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	got := variantsOnShards(t, e, sale, k)
	want := map[string][]int64{"a": {3, 3, 3}, "b": {2, 2, 2}, "c": {1, 0, 0}}
	for v, w := range want {
		for i := range w {
			if got[i][v] != w[i] {
				t.Fatalf("variant %s per shard after the rebalance: %v, want %v (report %+v)", v, got, want, rep)
			}
		}
	}
	moved := map[string]int{}
	for _, m := range rep.Moves {
		if m.Variant == "" || m.Units <= 0 {
			t.Fatalf("move %+v of a variant sale names no variant", m)
		}
		moved[m.Variant] += m.Units
	}
	if moved["a"] != 6 || moved["b"] != 4 || moved["c"] != 0 {
		t.Fatalf("units moved per variant %v, want a 6, b 4, c 0", moved)
	}
	if rep.StocksBefore[0] != 10 || rep.StocksBefore[1] != 6 || rep.StocksAfter[0] != 6 || rep.StocksAfter[1] != 5 || rep.StocksAfter[2] != 5 {
		t.Fatalf("totals before %v after %v, want [10 6 0] -> [6 5 5]", rep.StocksBefore, rep.StocksAfter)
	}
	if len(rep.Variants) != 3 || rep.Variants[0].ID != "a" || rep.Variants[0].StocksBefore[0] != 9 || rep.Variants[0].StocksAfter[2] != 3 {
		t.Fatalf("per-variant report %+v", rep.Variants)
	}
	journalsEmpty(t, e, sale, k)
	// An even sale moves nothing.
	if again, err := e.Svc.Sales.Rebalance(ctx, sale); err != nil || len(again.Moves) != 0 {
		t.Fatalf("second rebalance: %+v %v", again, err)
	}
	// A single-stock sale's report has no variant anywhere (its JSON is what it was).
	plain := e.ShardedSale(6, 2)
	prep, err := e.Svc.Sales.Rebalance(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(prep)
	if strings.Contains(string(b), "variant") {
		t.Fatalf("single-stock report %s mentions variants", b)
	}
}

// Serving hungry shards, only the variants someone waits for move: the others stay put even
// when they are uneven.
func TestAHungryRebalanceMovesOnlyTheVariantsBuyersWaitFor(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k = 2
	sale := e.ShardedVariantSale(k, 1, backend.VariantSpec{ID: "a", Stock: 4}, backend.VariantSpec{ID: "x", Stock: 4})
	e.PlaceVariants(sale, []map[string]int{{"a": 4, "x": 4}, {"a": 0, "x": 0}})
	h := &servicetest.Hunger{}
	h.Add(1, "x")
	rep, err := e.Svc.Sales.RebalanceHungry(ctx, sale, h)
	if err != nil {
		t.Fatal(err)
	}
	got := variantsOnShards(t, e, sale, k)
	if got[0]["a"] != 4 || got[1]["a"] != 0 || got[0]["x"] != 2 || got[1]["x"] != 2 {
		t.Fatalf("after a rebalance for x on shard 1: %v (moves %+v)", got, rep.Moves)
	}
}

// (b) A buyer refused sold_out of variant x on a shard that has none, while another shard has
// all of x, pulls x to his shard through the event his refusal publishes: the rebalancer
// moves x only, and his retry is accepted.
func TestABuyerRefusedAVariantOnHisShardPullsThatVariantToIt(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	const k = 2
	// "a" sorts before "x": had the rebalance planned it, it would have moved before x did.
	sale := e.ShardedVariantSale(k, 1, backend.VariantSpec{ID: "a", Stock: 4}, backend.VariantSpec{ID: "x", Stock: 4})
	e.PlaceVariants(sale, []map[string]int{{"a": 3, "x": 4}, {"a": 1, "x": 0}})
	e.StartRebalancer()

	buyer := usersOfShards("want-x", k, 1, 1)[0]
	reply := buyVariantOnShard(t, e, sale, k, buyer, "x", 1)
	if reply[0].(int64) != 6 || len(reply) < 2 || reply[1] != "x" {
		t.Fatalf("buying x on a shard without x: %v, want sold_out of x", reply)
	}
	testenv.WaitFor(t, 10*time.Second, "x to move to the refused buyer's shard", func() bool {
		return variantsOnShards(t, e, sale, k)[1]["x"] >= 1
	})
	if reply := buyVariantOnShard(t, e, sale, k, buyer, "x", 1); reply[0].(int64) != 0 {
		t.Fatalf("the buyer's retry with x on his shard: %v", reply)
	}
	got := variantsOnShards(t, e, sale, k)
	if got[0]["a"] != 3 || got[1]["a"] != 1 {
		t.Fatalf("variant a moved though nobody waits for it: %v", got)
	}
	if got[0]["x"]+got[1]["x"] != 3 {
		t.Fatalf("x per shard %v after one sale of 4: a unit was created or lost", got)
	}
}

// A shard whose total ran out is hungry for every variant: a buyer refused there pulls some of
// each variant to it.
func TestABuyerRefusedOnAnEmptyShardOfAVariantSalePullsEveryVariant(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	const k = 3
	sale := e.ShardedVariantSale(k, 1, backend.VariantSpec{ID: "x", Stock: 3}, backend.VariantSpec{ID: "y", Stock: 3})
	e.PlaceVariants(sale, []map[string]int{{"x": 3, "y": 3}, {"x": 0, "y": 0}, {"x": 0, "y": 0}})
	e.StartRebalancer()

	buyer := usersOfShards("empty", k, 1, 2)[0]
	if reply := buyVariantOnShard(t, e, sale, k, buyer, "y", 1); reply[0].(int64) != 6 {
		t.Fatalf("buying on an empty shard: %v, want sold_out", reply)
	}
	testenv.WaitFor(t, 10*time.Second, "both variants to reach the empty shard", func() bool {
		got := variantsOnShards(t, e, sale, k)
		return got[2]["x"] >= 1 && got[2]["y"] >= 1
	})
	if reply := buyVariantOnShard(t, e, sale, k, buyer, "y", 1); reply[0].(int64) != 0 {
		t.Fatalf("the buyer's retry: %v", reply)
	}
}

// (4) A variant move interrupted after its take is finished by the next rebalance, and by the
// rebalance that follows a reconcile, into the variant it was taken from, exactly once.
func TestAnInterruptedVariantMoveIsFinishedIntoItsVariantExactlyOnce(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	const k = 2
	sale := e.ShardedVariantSale(k, 1, backend.VariantSpec{ID: "a", Stock: 6}, backend.VariantSpec{ID: "b", Stock: 6})
	e.PlaceVariants(sale, []map[string]int{{"a": 6, "b": 3}, {"a": 0, "b": 3}})
	from, to := contract.ShardID(sale, 0), contract.ShardID(sale, 1)
	take := func(variant string, n int) {
		t.Helper()
		id := contract.VariantMoveID(uuid.Must(uuid.NewV7()).String(), variant)
		got, err := lua.ShardTakeCall{From: from, Move: id, Units: n, To: to}.Run(ctx, e.Redis)
		if err != nil || got != n {
			t.Fatalf("take of %d %s = %d, %v", n, variant, got, err)
		}
	}
	take("a", 2) // the rebalancer died right after it
	if got := variantsOnShards(t, e, sale, k); got[0]["a"]+got[1]["a"] != 4 {
		t.Fatalf("2 units of a in transit: shards hold %v", got)
	}
	rep, err := e.Svc.Sales.Rebalance(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	got := variantsOnShards(t, e, sale, k)
	if rep.Finished != 1 || got[0]["a"]+got[1]["a"] != 6 || got[0]["b"]+got[1]["b"] != 6 {
		t.Fatalf("after finishing: finished %d, shards %v; want 1 and 6 of each variant", rep.Finished, got)
	}
	if got[0]["a"] != 3 || got[1]["a"] != 3 || got[0]["b"] != 3 {
		t.Fatalf("after the rebalance %v, want 3 of each everywhere", got)
	}
	journalsEmpty(t, e, sale, k)

	// The same through reconcile's rebalance (what Reconcile calls under the sale's lock).
	take("b", 3)
	var rrep admin.ReconcileReport
	if err := e.Svc.Sales.WithSaleLock(ctx, sale, 5*time.Second, func(lock.Held) error {
		return e.Svc.Sales.AfterReconcile(ctx, sale, k, &rrep)
	}); err != nil {
		t.Fatal(err)
	}
	got = variantsOnShards(t, e, sale, k)
	if rrep.Rebalance == nil || rrep.Rebalance.Finished != 1 || got[0]["b"]+got[1]["b"] != 6 || got[0]["b"] != 3 || got[0]["a"]+got[1]["a"] != 6 {
		t.Fatalf("after reconcile's rebalance: %+v, shards %v", rrep.Rebalance, got)
	}
	journalsEmpty(t, e, sale, k)
}
