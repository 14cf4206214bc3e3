//go:build integration

package gate

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/relay"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// newShardedSale preheats a sale whose stock is split over k shards, as the backend does
// (backend/shard.go preheatShards): each shard with its portion, the shard ids in the sales
// index, then the sale's own meta with the shard count.
func newShardedSale(t testing.TB, rdb redis.UniversalClient, stock, k int) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	starts, ends := now.Add(-time.Minute).UnixMilli(), now.Add(time.Hour).UnixMilli()
	ids := contract.ShardIDs(sale, k)
	for i, n := range contract.SplitStock(stock, k) {
		if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(ids[i])}, ids[i], n, starts, ends, "init", 60_000, "", testNamespace).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.SAdd(ctx, contract.SalesIndexKey, ids[i]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 0, starts, ends, "init", 60_000, k, testNamespace).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keys := []string{contract.MetaKey(sale)}
		for _, id := range ids {
			rdb.SRem(ctx, contract.SalesIndexKey, id)
			keys = append(keys, contract.MetaKey(id), contract.BuyersKey(id), contract.TokensKey(id), contract.OutboxKey(id))
		}
		for _, key := range keys {
			rdb.Del(ctx, key) // one by one: on a cluster the keys are in different slots
		}
	})
	return sale
}

func shardStocksOf(t testing.TB, rdb redis.UniversalClient, sale string, k int) []int64 {
	t.Helper()
	out := make([]int64, k)
	for i, id := range contract.ShardIDs(sale, k) {
		out[i] = stockOf(t, rdb, id)
	}
	return out
}

// usersPerShard returns n user ids for each of k shards.
func usersPerShard(prefix string, k, n int) [][]string {
	out := make([][]string, k)
	for i := 0; ; i++ {
		u := prefix + strconv.Itoa(i)
		s := contract.ShardOf(u, k)
		if len(out[s]) < n {
			out[s] = append(out[s], u)
		}
		full := true
		for _, us := range out {
			full = full && len(us) == n
		}
		if full {
			return out
		}
	}
}

// A sharded sale sells exactly its stock, one unit per user, whatever the concurrency: every
// user sends three requests at once, and every shard sells exactly its portion.
func TestShardedSaleSellsExactlyItsStockOneUnitPerUser(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	base := startCaddy(t, newGatewayConfig(t, vhost))
	const k, stock = 4, 40
	sale := newShardedSale(t, rdb, stock, k)

	var users []string
	for _, us := range usersPerShard("u", k, 25) { // 25 users per shard for 10 units each
		users = append(users, us...)
	}
	const repeats = 3
	answers := make([]answer, len(users)*repeats)
	parallel(len(answers), func(i int) { answers[i] = buy(t, base, sale, users[i/repeats], "") })

	counts := tally(answers)
	if counts["accepted"] != stock {
		t.Fatalf("answers: %s; want accepted=%d", summary(counts), stock)
	}
	if counts["accepted"]+counts[contract.CodeSoldOut]+counts[contract.CodeAlreadyBought] != len(answers) {
		t.Fatalf("unexpected answers: %s", summary(counts))
	}
	winners := map[string]string{}
	for i, a := range answers {
		if a.Status != http.StatusAccepted {
			continue
		}
		u := users[i/repeats]
		if prev, ok := winners[u]; ok {
			t.Errorf("user %s accepted twice: %s and %s", u, prev, a.OrderID)
		}
		winners[u] = a.OrderID
	}
	for i, n := range shardStocksOf(t, rdb, sale, k) {
		if n != 0 {
			t.Errorf("shard %d stock = %d, want 0", i, n)
		}
	}
	for i, id := range contract.ShardIDs(sale, k) {
		if got, want := rdb.HLen(ctx, contract.BuyersKey(id)).Val(), int64(contract.SplitStock(stock, k)[i]); got != want {
			t.Errorf("shard %d has %d buyers, want %d", i, got, want)
		}
	}
	if n := rdb.HGet(ctx, contract.MetaKey(sale), "stock").Val(); n != "0" {
		t.Errorf("the sale's own meta stock = %s, want 0 (the units are in the shards)", n)
	}

	// The relay delivers every shard's winners, as messages of the sale.
	testenv.WaitFor(t, 20*time.Second, "every winner in the queue", func() bool { return queue.Distinct() >= stock })
	for u, id := range winners {
		m := queue.Get(id)
		if m.OrderID != id || m.SaleID != sale || m.UserID != u {
			t.Errorf("order %s of %s reached the queue as %+v", id, u, m)
		}
	}
	if got := queue.Distinct(); got != stock {
		t.Errorf("%d distinct orders in the queue, want %d", got, stock)
	}
	testenv.WaitFor(t, 10*time.Second, "every shard's outbox to drain", func() bool {
		for _, id := range contract.ShardIDs(sale, k) {
			if rdb.XLen(ctx, contract.OutboxKey(id)).Val() != 0 {
				return false
			}
		}
		return true
	})
}

// A shard that sells out does not sell out the sale: a buyer hashed to the empty shard is told
// sold_out (the fairness cost of sharding) while a buyer of another shard still gets a unit;
// the shard's restock event (compensation, rebalance) clears only that shard's flag.
func TestShardSellOutLeavesTheOtherShardsSelling(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	sale := newShardedSale(t, rdb, 2, 2) // one unit per shard
	us := usersPerShard("v", 2, 4)

	if a := buy(t, base, sale, us[0][0], ""); a.Status != http.StatusAccepted {
		t.Fatalf("first buyer of shard 0: %+v", a)
	}
	if a := buy(t, base, sale, us[0][1], ""); a.Code != contract.CodeSoldOut {
		t.Fatalf("second buyer of shard 0: %+v, want sold_out", a)
	}
	// Shard 0 is flagged locally now: a unit put back without an event is not seen...
	rdb.HSet(ctx, contract.MetaKey(contract.ShardID(sale, 0)), "stock", 1)
	if a := buy(t, base, sale, us[0][2], ""); a.Code != contract.CodeSoldOut {
		t.Fatalf("shard 0 after sell-out, without an event: %+v, want sold_out from memory", a)
	}
	// ...while shard 1 still sells.
	if a := buy(t, base, sale, us[1][0], ""); a.Status != http.StatusAccepted {
		t.Fatalf("first buyer of shard 1 after shard 0 sold out: %+v", a)
	}
	// The shard's restock event clears its flag.
	rdb.Publish(ctx, contract.EventsChannel, contract.EventRestock+":"+contract.ShardID(sale, 0))
	testenv.WaitFor(t, 5*time.Second, "the shard's restock to clear its flag", func() bool {
		return buy(t, base, sale, us[0][3], "").Status == http.StatusAccepted
	})
	if got := shardStocksOf(t, rdb, sale, 2); got[0] != 0 || got[1] != 0 {
		t.Fatalf("shard stocks %v, want [0 0]", got)
	}
}

// The relay finds shard outboxes through the sales index (not only the ones its own gate
// served) and publishes their entries as messages of the sale, on the sale's routing key.
func TestRelayDeliversEveryShardOutboxFoundInTheIndex(t *testing.T) {
	srv := testenv.StartRedis(t) // private: a relay that reads the whole index drains only ours
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	const k = 3
	sale := newShardedSale(t, rdb, 30, k)
	var orders []string
	for i := range 12 {
		user := "w" + strconv.Itoa(i)
		p := core.Purchase{Target: contract.UserShardID(sale, user, k), Request: core.Request{User: user}, OrderID: testenv.ID("o")}
		v, err := core.Decide(ctx, rdb, p)
		if err != nil || v.Outcome != core.Accepted {
			t.Fatalf("decide on %s: %+v %v", p.Target, v, err)
		}
		orders = append(orders, p.OrderID)
	}
	r := relay.New(relay.Options{
		Redis:     rdb,
		Connect:   func(ctx context.Context) (*amqp.Connection, error) { return amqp.Dial(vhost) },
		Namespace: testNamespace,
		Config:    relay.Config{PollInterval: relay.Duration(20 * time.Millisecond), DiscoverInterval: relay.Duration(100 * time.Millisecond)},
	})
	r.Start(ctx)
	t.Cleanup(func() { _ = r.Stop() })
	testenv.WaitFor(t, 20*time.Second, "the 12 orders in the queue", func() bool { return queue.Distinct() >= 12 })
	for _, id := range orders {
		if m := queue.Get(id); m.SaleID != sale {
			t.Errorf("order %s: sale_id %q, want %q", id, m.SaleID, sale)
		}
	}
	testenv.WaitFor(t, 10*time.Second, "the shard outboxes to drain", func() bool {
		for _, id := range contract.ShardIDs(sale, k) {
			if rdb.XLen(ctx, contract.OutboxKey(id)).Val() != 0 {
				return false
			}
		}
		return true
	})
}

func TestOneUserHammeringAShardedSaleGetsOneUnit(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	const k = 4
	sale := newShardedSale(t, rdb, 8, k) // 2 per shard
	answers := make([]answer, 50)
	parallel(len(answers), func(i int) { answers[i] = buy(t, base, sale, "same-user", "") })
	counts := tally(answers)
	if counts["accepted"] != 1 || counts[contract.CodeAlreadyBought] != 49 {
		t.Fatalf("answers: %s; want accepted=1 already_bought=49", summary(counts))
	}
	mine := contract.ShardOf("same-user", k)
	for i, n := range shardStocksOf(t, rdb, sale, k) {
		if want := int64(2); i == mine && n != want-1 || i != mine && n != want {
			t.Errorf("shard %d stock %d: only the user's shard %d may have sold, once", i, n, mine)
		}
	}
}
