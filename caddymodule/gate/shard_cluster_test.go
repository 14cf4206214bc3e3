//go:build integration

package gate

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// On a 3-master Redis Cluster, one sharded sale's shards live in different slots on more than
// one master, and the gate still sells exactly the stock, one unit per user, with single-use
// tokens found in the user's shard; the relay delivers every shard's winners.
func TestShardedSaleSpreadsOverClusterMastersAndNeverOversells(t *testing.T) {
	seeds, rdb := handlertest.RedisCluster(t)
	ctx := context.Background()
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	cfg := newGatewayConfig(t, vhost)
	cfg.RequireToken = true
	base := startCaddyOnCluster(t, cfg, seeds)

	const k, stock = 8, 40
	sale := newShardedSale(t, rdb, stock, k)
	slots, masters := map[int64]bool{}, map[string]bool{}
	for _, id := range contract.ShardIDs(sale, k) {
		slot, err := rdb.ClusterKeySlot(ctx, contract.MetaKey(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot] = true
		for _, key := range []string{contract.BuyersKey(id), contract.TokensKey(id), contract.OutboxKey(id)} {
			if s := rdb.ClusterKeySlot(ctx, key).Val(); s != slot {
				t.Fatalf("%s is in slot %d, its shard's meta in %d: one script could not touch both", key, s, slot)
			}
		}
		c, err := rdb.MasterForKey(ctx, contract.MetaKey(id))
		if err != nil {
			t.Fatal(err)
		}
		masters[c.Options().Addr] = true
	}
	if len(slots) != k {
		t.Errorf("the %d shards use %d slots, want %d", k, len(slots), k)
	}
	if len(masters) < 2 {
		t.Errorf("the %d shards are all on one master: %v", k, masters)
	}

	kr := testKeyring(t, "k1")
	var users []string
	for _, us := range usersPerShard("c", k, 10) { // 10 users per shard for 5 units each
		users = append(users, us...)
	}
	toks := make([]string, len(users))
	for i, u := range users {
		tok, c, err := kr.Issue(sale, u, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		// Where the token issuer stores it for a sharded sale: the user's shard.
		if err := rdb.HSet(ctx, contract.TokensKey(contract.UserShardID(sale, u, k)), u, tokenformat.StoreValue(c)).Err(); err != nil {
			t.Fatal(err)
		}
		toks[i] = tok
	}
	const repeats = 2
	answers := make([]answer, len(users)*repeats)
	parallel(len(answers), func(i int) { answers[i] = buy(t, base, sale, users[i/repeats], toks[i/repeats]) })
	counts := tally(answers)
	if counts["accepted"] != stock {
		t.Fatalf("answers: %s; want accepted=%d", summary(counts), stock)
	}
	won := map[string]bool{}
	for i, a := range answers {
		if a.Status == http.StatusAccepted {
			if won[users[i/repeats]] {
				t.Errorf("user %s accepted twice", users[i/repeats])
			}
			won[users[i/repeats]] = true
		}
	}
	for i, n := range shardStocksOf(t, rdb, sale, k) {
		if n != 0 {
			t.Errorf("shard %d stock = %d, want 0", i, n)
		}
	}
	testenv.WaitFor(t, 30*time.Second, "every winner in the queue", func() bool { return queue.Distinct() >= stock })
	for _, a := range answers {
		if a.Status == http.StatusAccepted && queue.Get(a.OrderID).SaleID != sale {
			t.Errorf("accepted order %s did not reach the queue as an order of %s", a.OrderID, sale)
		}
	}
	if got := queue.Distinct(); got != stock {
		t.Errorf("%d distinct orders in the queue, want %d", got, stock)
	}
}
