//go:build integration

package token

import (
	"context"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// For a sharded sale the token's nonce is recorded in the user's shard, where the gate's
// script (which runs on that shard's keys only) checks it; the sale's own tokens hash stays
// empty. The first request learns the shard count, later ones go to the shard at once.
func TestATokenOfAShardedSaleIsRecordedInTheUsersShard(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	kr := testRing(t)
	h := newIssuer(t, rdb, kr, time.Minute, 5*time.Minute)
	sale := testenv.ID("s")
	const k = 4
	now := time.Now()
	starts, ends := now.Add(-time.Minute).UnixMilli(), now.Add(time.Hour).UnixMilli()
	for _, id := range contract.ShardIDs(sale, k) {
		if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(id)}, id, 5, starts, ends, "init", 60_000).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(id), contract.TokensKey(id)) })
	}
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 0, starts, ends, "init", 60_000, k).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(sale), contract.TokensKey(sale)) })

	for _, user := range []string{"alice", "bob", "carol", "dave", "erin"} {
		a := ask(t, h, "POST", tokenPath(sale), user)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", user, a.status, a.raw)
		}
		c, err := kr.Verify(a.body["token"], sale, user, time.Now())
		if err != nil {
			t.Fatalf("%s: token does not verify for the sale: %v", user, err)
		}
		shard := contract.UserShardID(sale, user, k)
		if got := rdb.HGet(ctx, contract.TokensKey(shard), user).Val(); got != tokenformat.StoreValue(c) {
			t.Errorf("%s: shard %s records %q, want %q", user, shard, got, tokenformat.StoreValue(c))
		}
	}
	if n := rdb.Exists(ctx, contract.TokensKey(sale)).Val(); n != 0 {
		t.Error("the sale's own tokens hash was written: the gate would never find those tokens")
	}
	if got := h.core.Shards.Of(sale); got != k {
		t.Errorf("the issuer remembers %d shards, want %d", got, k)
	}
}
