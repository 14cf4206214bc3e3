//go:build integration

package gate

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// startCaddyOnCluster is startCaddy with the seckill app's Redis addrs set to the cluster's
// seeds (several addrs: the app builds a ClusterClient).
func startCaddyOnCluster(t *testing.T, c gatewayConfig, seeds []string) string {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(c.JSON(), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["apps"].(map[string]any)["seckill"].(map[string]any)["redis"].(map[string]any)["addrs"] = seeds
	raw, _ := json.Marshal(cfg)
	base := "http://127.0.0.1:" + strconv.Itoa(c.Port)
	handlertest.StartCaddy(t, raw, base)
	return base
}

// The gate, its token check and its relay run unchanged on a 3-master Redis Cluster: every
// script touches only one sale's hash-tagged keys, and the relay finds the sale through the
// index and drains its outbox on whichever master owns the slot.
func TestGateNeverOversellsOnARedisCluster(t *testing.T) {
	seeds, rdb := handlertest.RedisCluster(t)
	ctx := context.Background()
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	cfg := newGatewayConfig(t, vhost)
	cfg.RequireToken = true
	base := startCaddyOnCluster(t, cfg, seeds)

	// Two sales on different masters (each sale's keys share one slot). The cluster is
	// private to this test: no cleanup of its keys is needed.
	sale := newSale(t, rdb, 20, -time.Minute, time.Hour)
	other := otherMasterSale(t, rdb, sale)
	preheat(t, rdb, other, 5, -time.Minute, time.Hour)
	kr := testKeyring(t, "k1")
	issue := func(sale, user string) string {
		tok, c, err := kr.Issue(sale, user, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, contract.TokensKey(sale), user, tokenformat.StoreValue(c)).Err(); err != nil {
			t.Fatal(err)
		}
		return tok
	}

	const buyers = 200
	toks := make([]string, buyers)
	for i := range toks {
		toks[i] = issue(sale, "u"+strconv.Itoa(i))
	}
	answers := make([]answer, buyers)
	parallel(buyers, func(i int) { answers[i] = buy(t, base, sale, "u"+strconv.Itoa(i), toks[i]) })
	counts := tally(answers)
	if counts["accepted"] != 20 || counts[contract.CodeSoldOut] != buyers-20 {
		t.Fatalf("answers: %s; want accepted=20 sold_out=%d", summary(counts), buyers-20)
	}
	if got := stockOf(t, rdb, sale); got != 0 {
		t.Errorf("Redis stock = %d, want 0", got)
	}

	// One token used twice on the other sale: one purchase, then the order it made.
	tok := issue(other, "twice")
	first := buy(t, base, other, "twice", tok)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first use of the token: %+v", first)
	}
	if a := buy(t, base, other, "twice", tok); a.Status != 409 || a.Code != contract.CodeAlreadyBought || a.OrderID != first.OrderID {
		t.Fatalf("second use of the token: %+v, want 409 %s with %s", a, contract.CodeAlreadyBought, first.OrderID)
	}
	if got := stockOf(t, rdb, other); got != 4 {
		t.Errorf("other sale's stock = %d, want 4", got)
	}

	testenv.WaitFor(t, 20*time.Second, "21 orders in the queue", func() bool { return queue.Distinct() >= 21 })
	for _, a := range answers {
		if a.Status == http.StatusAccepted && !queue.Has(a.OrderID) {
			t.Errorf("accepted order %s never reached the queue", a.OrderID)
		}
	}
	if got := queue.Distinct(); got != 21 {
		t.Errorf("%d distinct orders reached the queue, want 21", got)
	}
	testenv.WaitFor(t, 10*time.Second, "the outboxes to drain", func() bool {
		return rdb.XLen(ctx, contract.OutboxKey(sale)).Val() == 0 && rdb.XLen(ctx, contract.OutboxKey(other)).Val() == 0
	})
}

// otherMasterSale returns a fresh sale id whose keys live on another master than sale's.
func otherMasterSale(t *testing.T, rdb *redis.ClusterClient, sale string) string {
	t.Helper()
	ctx := context.Background()
	master := func(s string) string {
		c, err := rdb.MasterForKey(ctx, contract.MetaKey(s))
		if err != nil {
			t.Fatal(err)
		}
		return c.Options().Addr
	}
	for range 100 {
		if s := testenv.ID("s"); master(s) != master(sale) {
			return s
		}
	}
	t.Fatal("no sale id on another master in 100 tries")
	return ""
}
