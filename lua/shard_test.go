//go:build integration

package lua

import (
	"context"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A sharded sale's own meta hash decides nothing: the gate and token scripts answer "sharded"
// with the shard count, and write nothing.
func TestTheSaleOfAShardedSaleAnswersShardedAndWritesNothing(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now().UnixMilli()
	res, err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 0, now-1000, now+3_600_000, "init", 60_000, 8).Int64Slice()
	if err != nil || res[0] != 1 {
		t.Fatalf("preheat = %v, %v", res, err)
	}
	keys := []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale)}
	t.Cleanup(func() { rdb.Del(ctx, keys...) })
	if k := rdb.HGet(ctx, contract.MetaKey(sale), contract.FieldShards).Val(); k != "8" {
		t.Fatalf("shards field %q, want 8", k)
	}
	got, err := Gate.Run(ctx, rdb, keys, sale, "u1", "o1", "", "relay").Slice()
	if err != nil || len(got) != 2 || got[0].(int64) != 7 || got[1].(int64) != 8 {
		t.Fatalf("gate on the sale = %v, %v; want [7 8]", got, err)
	}
	tok, err := TokenIssue.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.TokensKey(sale)}, "u1", "0123456789012345678901", 60_000, 0).Slice()
	if err != nil || tok[0] != "sharded" || tok[1].(int64) != 8 {
		t.Fatalf("token_issue on the sale = %v, %v; want [sharded 8 now]", tok, err)
	}
	if n := rdb.Exists(ctx, keys[1:]...).Val(); n != 0 {
		t.Fatalf("%d keys written on a sharded sale's own keys", n)
	}
	// A re-preheat never changes the shard count.
	if _, err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 0, now-1000, now+3_600_000, "init", 60_000, 4).Result(); err != nil {
		t.Fatal(err)
	}
	if k := rdb.HGet(ctx, contract.MetaKey(sale), contract.FieldShards).Val(); k != "8" {
		t.Fatalf("shards field %q after a second preheat, want 8", k)
	}
}

// shard_take never takes more than the donor has; shard_give applies a move once.
func TestShardMovesTakeAtMostTheStockAndGiveOnce(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	from, to := contract.ShardID(sale, 0), contract.ShardID(sale, 1)
	now := time.Now().UnixMilli()
	for _, id := range []string{from, to} {
		if err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(id)}, id, 2, now-1000, now+3_600_000, "init", 60_000).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(id), contract.MovesKey(id), contract.MovedInKey(id)) })
	}
	take := func(id string, n int) int64 {
		v, err := ShardTake.Run(ctx, rdb, []string{contract.MetaKey(from), contract.MovesKey(from)}, id, n, to).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := take("m1", 5); got != 2 {
		t.Fatalf("took %d of a donor holding 2 (asked 5), want 2", got)
	}
	if got := take("m2", 1); got != 0 {
		t.Fatalf("took %d from an empty donor", got)
	}
	if rdb.HGet(ctx, contract.MetaKey(from), "stock").Val() != "0" || rdb.HGet(ctx, contract.MovesKey(from), "m1").Val() != to+"|2" {
		t.Fatalf("donor after the take: stock %s, journal %v", rdb.HGet(ctx, contract.MetaKey(from), "stock").Val(), rdb.HGetAll(ctx, contract.MovesKey(from)).Val())
	}
	if rdb.HExists(ctx, contract.MovesKey(from), "m2").Val() {
		t.Fatal("an empty take was journaled")
	}
	give := func() []int64 {
		v, err := ShardGive.Run(ctx, rdb, []string{contract.MetaKey(to), contract.MovedInKey(to)}, to, "m1", 2).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := give(); got[0] != 1 || got[1] != 4 {
		t.Fatalf("give = %v, want [1 4]", got)
	}
	if got := give(); got[0] != 0 || got[1] != 4 {
		t.Fatalf("second give of the same move = %v, want [0 4]: a unit was created", got)
	}
}

// A shard refusing a buyer for want of stock says so on seckill:events (the rebalancer's cue);
// an unsharded sale's refusal stays silent, as it always was.
func TestOnlyAShardAnnouncesARefusalForWantOfStock(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	shard := contract.ShardID(sale, 1)
	now := time.Now().UnixMilli()
	for _, id := range []string{sale, shard} {
		if err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(id)}, id, 0, now-1000, now+3_600_000, "init", 60_000).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(id)) })
	}
	sub := rdb.Subscribe(ctx, contract.EventsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	refuse := func(id string) {
		keys := []string{contract.MetaKey(id), contract.BuyersKey(id), contract.TokensKey(id), contract.OutboxKey(id)}
		res, err := Gate.Run(ctx, rdb, keys, id, "u1", "o1", "", "relay").Slice()
		if err != nil || res[0].(int64) != 6 {
			t.Fatalf("gate on %s = %v %v, want sold_out", id, res, err)
		}
	}
	marker := "test-marker:" + sale
	refuse(sale)
	rdb.Publish(ctx, contract.EventsChannel, marker)
	refuse(shard)
	for _, want := range []string{marker, contract.EventSoldOut + ":" + shard} {
		for {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Payload == contract.EventSoldOut+":"+sale {
				t.Fatal("an unsharded sale's refusal was published")
			}
			if msg.Payload == want {
				break
			}
		}
	}
}
