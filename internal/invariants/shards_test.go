//go:build integration

package invariants_test

import (
	"context"
	"testing"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The verifier sees a sharded sale as one sale: its stock is the sum over the shards and its
// buyers are every shard's; an unsharded sale reads exactly as before.
func TestVerifierSumsAShardedSaleOverItsShards(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	ids := contract.ShardIDs(sale, 3)
	keys := []string{contract.MetaKey(sale)}
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldStock, 0, contract.FieldShards, 3)
	for i, id := range ids {
		rdb.HSet(ctx, contract.MetaKey(id), contract.FieldStock, i+1) // 1 + 2 + 3
		rdb.HSet(ctx, contract.BuyersKey(id), "u"+id, "o"+id)
		keys = append(keys, contract.MetaKey(id), contract.BuyersKey(id))
	}
	t.Cleanup(func() {
		for _, k := range keys {
			rdb.Del(ctx, k)
		}
	})
	meta, buyers, err := invariants.RedisSale(ctx, rdb, sale)
	if err != nil {
		t.Fatal(err)
	}
	if meta[contract.FieldStock] != "6" || len(buyers) != 3 || buyers["u"+ids[2]] != "o"+ids[2] {
		t.Fatalf("sharded sale read as meta %v, buyers %v; want stock 6 and 3 buyers", meta, buyers)
	}

	plain := testenv.ID("s")
	rdb.HSet(ctx, contract.MetaKey(plain), contract.FieldStock, 4)
	rdb.HSet(ctx, contract.BuyersKey(plain), "u1", "o1")
	t.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(plain), contract.BuyersKey(plain)) })
	meta, buyers, err = invariants.RedisSale(ctx, rdb, plain)
	if err != nil || meta[contract.FieldStock] != "4" || len(buyers) != 1 {
		t.Fatalf("unsharded sale read as %v %v %v", meta, buyers, err)
	}
}
