//go:build integration

package backend

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// shardedVariantSale creates an open sale of the given variants over k shards, with limit,
// and preheats it (each shard gets its part of every variant).
func (e *env) shardedVariantSale(k, limit int, variants ...VariantSpec) string {
	e.t.Helper()
	ctx := context.Background()
	id := testenv.ID("svr")
	now := time.Now()
	if _, err := e.svc.Sales.CreateSale(ctx, SaleSpec{ID: id, Shards: k, PerUserLimit: limit, Variants: variants,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWithin: "15m"}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		for _, s := range contract.ShardIDs(id, k) {
			e.rdb.Del(ctx, contract.MetaKey(s), contract.BuyersKey(s), contract.CompensatedKey(s), contract.HeldKey(s),
				contract.OutboxKey(s), contract.TokensKey(s), contract.MovesKey(s), contract.MovedInKey(s), controls.StockRequestsKey(s))
			e.rdb.SRem(ctx, contract.SalesIndexKey, s)
		}
		e.rdb.Del(ctx, contract.MetaKey(id))
		e.rdb.Del(ctx, lockRedisKeys(lock.SaleKey(id))...)
		e.rdb.SRem(ctx, contract.SalesIndexKey, id)
	})
	if _, err := e.svc.Sales.Preheat(ctx, id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// placeVariants overwrites every shard's units: units[i][v] of variant v on shard i, the
// shard's stock their sum (the sale's variants must be the same).
func (e *env) placeVariants(sale string, units []map[string]int) {
	e.t.Helper()
	for i, us := range units {
		sum := 0
		fields := []any{}
		for v, n := range us {
			fields = append(fields, contract.VariantField(v), n)
			sum += n
		}
		fields = append(fields, contract.FieldStock, sum)
		if err := e.rdb.HSet(context.Background(), contract.MetaKey(contract.ShardID(sale, i)), fields...).Err(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// variantsOnShards reads each shard's units of each variant, checking that every shard's
// stock is the sum of its variants'.
func variantsOnShards(t testing.TB, e *env, sale string, k int) []map[string]int64 {
	t.Helper()
	out := make([]map[string]int64, k)
	for i, id := range contract.ShardIDs(sale, k) {
		meta := e.rdb.HGetAll(context.Background(), contract.MetaKey(id)).Val()
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
func buyVariantOnShard(t testing.TB, e *env, sale string, k int, user, variant string, q int) []any {
	t.Helper()
	reply, err := lua.GateCall{Sale: contract.UserShardID(sale, user, k), User: user, OrderID: uuid.Must(uuid.NewV7()).String(),
		Group: "relay", Variant: variant, Quantity: q}.Run(context.Background(), e.rdb)
	if err != nil {
		t.Errorf("gate script: %v", err)
		return []any{int64(-1)}
	}
	return reply
}

func journalsEmpty(t testing.TB, e *env, sale string, k int) {
	t.Helper()
	for _, id := range contract.ShardIDs(sale, k) {
		if n := e.rdb.HLen(context.Background(), contract.MovesKey(id)).Val(); n != 0 {
			t.Errorf("shard %s still journals %d moves", id, n)
		}
	}
}

// startRebalancer runs RunRebalancer until the test ends and waits for its subscription.
func (e *env) startRebalancer() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{}, 1)
	e.svc.Sales.Subscribed = func() {
		select {
		case subscribed <- struct{}{}:
		default:
		}
	}
	stopped := make(chan struct{})
	go func() { e.svc.Sales.RunRebalancer(ctx); close(stopped) }()
	e.t.Cleanup(func() { cancel(); <-stopped })
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		e.t.Fatal("the rebalancer did not subscribe")
	}
}

// (a) The admin rebalance of a sharded variant sale evens out every variant on its own: the
// moves name their variant, each shard's stock stays the sum of its variants', no unit is
// created or lost, and a variant with fewer units than shards stays where it is.
func TestRebalanceOfAShardedVariantSaleEvensOutEachVariant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const k = 3
	sale := e.shardedVariantSale(k, 2, VariantSpec{ID: "a", Stock: 9}, VariantSpec{ID: "b", Stock: 6}, VariantSpec{ID: "c", Stock: 1})
	e.placeVariants(sale, []map[string]int{{"a": 9, "b": 0, "c": 1}, {"a": 0, "b": 6, "c": 0}, {"a": 0, "b": 0, "c": 0}})

	rep, err := e.svc.Sales.Rebalance(ctx, sale)
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
	if again, err := e.svc.Sales.Rebalance(ctx, sale); err != nil || len(again.Moves) != 0 {
		t.Fatalf("second rebalance: %+v %v", again, err)
	}
	// A single-stock sale's report has no variant anywhere (its JSON is what it was).
	plain := e.shardedSale(6, 2)
	prep, err := e.svc.Sales.Rebalance(ctx, plain)
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
	e := newEnv(t)
	ctx := context.Background()
	const k = 2
	sale := e.shardedVariantSale(k, 1, VariantSpec{ID: "a", Stock: 4}, VariantSpec{ID: "x", Stock: 4})
	e.placeVariants(sale, []map[string]int{{"a": 4, "x": 4}, {"a": 0, "x": 0}})
	h := &hunger{}
	h.Add(1, "x")
	rep, err := e.svc.Sales.RebalanceHungry(ctx, sale, h)
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
	e := newEnv(t)
	const k = 2
	// "a" sorts before "x": had the rebalance planned it, it would have moved before x did.
	sale := e.shardedVariantSale(k, 1, VariantSpec{ID: "a", Stock: 4}, VariantSpec{ID: "x", Stock: 4})
	e.placeVariants(sale, []map[string]int{{"a": 3, "x": 4}, {"a": 1, "x": 0}})
	e.startRebalancer()

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
	e := newEnv(t)
	const k = 3
	sale := e.shardedVariantSale(k, 1, VariantSpec{ID: "x", Stock: 3}, VariantSpec{ID: "y", Stock: 3})
	e.placeVariants(sale, []map[string]int{{"x": 3, "y": 3}, {"x": 0, "y": 0}, {"x": 0, "y": 0}})
	e.startRebalancer()

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
	e := newEnv(t)
	ctx := context.Background()
	const k = 2
	sale := e.shardedVariantSale(k, 1, VariantSpec{ID: "a", Stock: 6}, VariantSpec{ID: "b", Stock: 6})
	e.placeVariants(sale, []map[string]int{{"a": 6, "b": 3}, {"a": 0, "b": 3}})
	from, to := contract.ShardID(sale, 0), contract.ShardID(sale, 1)
	take := func(variant string, n int) {
		t.Helper()
		id := contract.VariantMoveID(uuid.Must(uuid.NewV7()).String(), variant)
		got, err := lua.ShardTakeCall{From: from, Move: id, Units: n, To: to}.Run(ctx, e.rdb)
		if err != nil || got != n {
			t.Fatalf("take of %d %s = %d, %v", n, variant, got, err)
		}
	}
	take("a", 2) // the rebalancer died right after it
	if got := variantsOnShards(t, e, sale, k); got[0]["a"]+got[1]["a"] != 4 {
		t.Fatalf("2 units of a in transit: shards hold %v", got)
	}
	rep, err := e.svc.Sales.Rebalance(ctx, sale)
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
	if err := e.svc.Sales.WithSaleLock(ctx, sale, 5*time.Second, func(lock.Held) error {
		return e.svc.Sales.AfterReconcile(ctx, sale, k, &rrep)
	}); err != nil {
		t.Fatal(err)
	}
	got = variantsOnShards(t, e, sale, k)
	if rrep.Rebalance == nil || rrep.Rebalance.Finished != 1 || got[0]["b"]+got[1]["b"] != 6 || got[0]["b"] != 3 || got[0]["a"]+got[1]["a"] != 6 {
		t.Fatalf("after reconcile's rebalance: %+v, shards %v", rrep.Rebalance, got)
	}
	journalsEmpty(t, e, sale, k)
}
