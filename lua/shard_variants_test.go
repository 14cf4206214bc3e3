//go:build integration

package lua

import (
	"context"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// On a sharded sale with variants a rebalance moves units of one variant at a time (the move id
// names it): the variant's field and the shard's total move together, so each shard's total
// stays the sum of its variants; a move id without a variant takes nothing.
func TestShardMovesOfASaleWithVariantsMoveOneVariant(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	from, to := contract.ShardID(sale, 0), contract.ShardID(sale, 1)
	now := time.Now()
	parts := map[string][]Variant{from: {{"red", 3}, {"blue", 1}}, to: {{"red", 0}, {"blue", 2}}}
	for _, id := range []string{from, to} {
		if _, _, err := (PreheatCall{Sale: id, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
			Retention: time.Minute, Limit: 2, Variants: parts[id]}).Run(ctx, rdb); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			rdb.Del(ctx, append(GateCall{Sale: id}.Keys(), contract.MovesKey(id), contract.MovedInKey(id))...)
		})
	}
	take := func(id string, n int) int64 {
		v, err := ShardTake.Run(ctx, rdb, []string{contract.MetaKey(from), contract.MovesKey(from)}, id, n, to).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := take("plain", 2); got != 0 {
		t.Fatalf("a move id without a variant took %d units of a shard with variants", got)
	}
	if got := take(contract.VariantMoveID("m1", "green"), 2); got != 0 {
		t.Fatalf("took %d units of a variant the shard has not", got)
	}
	red := contract.VariantMoveID("m2", "red")
	if got := take(red, 5); got != 3 {
		t.Fatalf("took %d red of 3 (asked 5)", got)
	}
	if j := rdb.HGet(ctx, contract.MovesKey(from), red).Val(); j != to+"|3" {
		t.Fatalf("journal entry %q: its format must stay <receiver>|<units>", j)
	}
	give := func() []int64 {
		v, err := ShardGive.Run(ctx, rdb, []string{contract.MetaKey(to), contract.MovedInKey(to)}, to, red, 3).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := give(); got[0] != 1 || got[1] != 5 {
		t.Fatalf("give = %v, want [1 5]", got)
	}
	if got := give(); got[0] != 0 {
		t.Fatalf("a second give of the same move applied again: %v", got)
	}
	f, r := rdb.HGetAll(ctx, contract.MetaKey(from)).Val(), rdb.HGetAll(ctx, contract.MetaKey(to)).Val()
	if f["stock"] != "1" || f["v:red"] != "0" || f["v:blue"] != "1" || r["stock"] != "5" || r["v:red"] != "3" || r["v:blue"] != "2" {
		t.Fatalf("after the move: donor %v, receiver %v", f, r)
	}
	// The receiver sells the red it got.
	if res := buyItem(t, rdb, to, "u1", "o1", "red", 2); code(res) != 0 {
		t.Fatalf("buying the moved red: %v", res)
	}
}
