//go:build integration

package lua

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The typed calls put each field where its script's header says: a sharded sale's base hash,
// a unit move between two shards, a reconcile, a compensation and an outbox acknowledgement,
// each through its struct, with the effect read back from Redis.
func TestTypedCallsDriveTheirScripts(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	from, to := contract.ShardID(sale, 0), contract.ShardID(sale, 1)
	t.Cleanup(func() {
		for _, id := range []string{sale, from, to} {
			rdb.Del(ctx, append(GateCall{Sale: id}.Keys(), contract.CompensatedKey(id), contract.MovesKey(id), contract.MovedInKey(id))...)
		}
	})
	now := time.Now()
	base := PreheatCall{Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Minute, Namespace: "ns1"}
	for _, id := range []string{from, to} {
		c := base
		c.Sale, c.Stock = id, 5
		if created, stock, err := c.Run(ctx, rdb); err != nil || !created || stock != 5 {
			t.Fatalf("preheat %s = %v %d %v", id, created, stock, err)
		}
	}
	c := base
	c.Sale, c.Shards = sale, 2
	if created, stock, err := c.Run(ctx, rdb); err != nil || !created || stock != 0 {
		t.Fatalf("preheat of the base hash = %v %d %v", created, stock, err)
	}
	if m := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val(); m["shards"] != "2" || m["namespace"] != "ns1" || m["stock"] != "0" {
		t.Fatalf("base hash %v, want shards 2, namespace ns1, stock 0", m)
	}

	if taken, err := (ShardTakeCall{From: from, Move: "m1", Units: 3, To: to}).Run(ctx, rdb); err != nil || taken != 3 {
		t.Fatalf("take = %d %v", taken, err)
	}
	give := ShardGiveCall{To: to, Move: "m1", Units: 3}
	if applied, stock, err := give.Run(ctx, rdb); err != nil || !applied || stock != 8 {
		t.Fatalf("give = %v %d %v, want applied, 8", applied, stock, err)
	}
	if applied, stock, err := give.Run(ctx, rdb); err != nil || applied || stock != 8 {
		t.Fatalf("a second give = %v %d %v, want not applied, 8", applied, stock, err)
	}

	stock, restored, raised, err := ReconcileCall{Sale: from, Delta: -1, Pairs: []any{"ann", "o0", "h:ann", 1}, Held: true}.Run(ctx, rdb)
	if err != nil || stock != 1 || restored != 1 || raised != 1 {
		t.Fatalf("reconcile = %d %d %d %v, want 1 1 1", stock, restored, raised, err)
	}

	if res, err := (GateCall{Sale: to, User: "bob", OrderID: "o1", Group: "relay"}).Run(ctx, rdb); err != nil || res[0] != int64(0) {
		t.Fatalf("gate = %v %v", res, err)
	}
	comp := CompensateCall{Sale: to, OrderID: "o1", User: "bob"}
	if done, stock, err := comp.Run(ctx, rdb); err != nil || !done || stock != 8 {
		t.Fatalf("compensate = %v %d %v, want done, 8", done, stock, err)
	}
	pipe := rdb.Pipeline()
	again := comp.EvalSha(ctx, pipe) // loaded by the Run above
	_, _ = pipe.Exec(ctx)
	if done, stock, err := CompensateReply(again); err != nil || done || stock != 8 {
		t.Fatalf("pipelined compensate again = %v %d %v, want not done, 8", done, stock, err)
	}

	entries, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "relay", Consumer: "t",
		Streams: []string{contract.OutboxKey(to), ">"}, Count: 10}).Result()
	if err != nil || len(entries) != 1 || len(entries[0].Messages) != 1 {
		t.Fatalf("outbox read = %v %v, want one entry", entries, err)
	}
	ack := OutboxAckCall{Sale: to, Group: "relay", Retention: time.Minute, IDs: []string{entries[0].Messages[0].ID}}
	if n, err := ack.Run(ctx, rdb); err != nil || n != 1 {
		t.Fatalf("ack = %d %v, want 1", n, err)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(to)).Val(); n != 0 {
		t.Fatalf("outbox holds %d entries after the ack, want 0", n)
	}
	if got, want := rdb.PExpireTime(ctx, contract.OutboxKey(to)).Val(), rdb.PExpireTime(ctx, contract.MetaKey(to)).Val(); got != want {
		t.Fatalf("drained outbox expires at %v, its shard at %v", got, want)
	}
}
