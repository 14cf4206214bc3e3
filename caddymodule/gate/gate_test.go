//go:build integration

package gate

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestGateNeverOversellsUnderConcurrentBuyers(t *testing.T) {
	rdb := testenv.Redis(t)
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	base := startCaddy(t, newGatewayConfig(t, vhost))
	sale := newSale(t, rdb, 100, -time.Minute, time.Hour)

	const buyers = 2000
	answers := make([]answer, buyers)
	parallel(buyers, func(i int) { answers[i] = buy(t, base, sale, "u"+strconv.Itoa(i), "") })

	counts := tally(answers)
	if counts["accepted"] != 100 || counts[contract.CodeSoldOut] != buyers-100 {
		t.Fatalf("answers: %s; want accepted=100 sold_out=%d", summary(counts), buyers-100)
	}
	if got := stockOf(t, rdb, sale); got != 0 {
		t.Errorf("Redis stock = %d, want 0", got)
	}
	testenv.WaitFor(t, 20*time.Second, "100 orders in the queue", func() bool { return queue.Distinct() >= 100 })
	for _, a := range answers {
		if a.Status == http.StatusAccepted && !queue.Has(a.OrderID) {
			t.Errorf("accepted order %s never reached the queue", a.OrderID)
		}
	}
	if got := queue.Distinct(); got != 100 {
		t.Errorf("%d distinct orders reached the queue, want 100", got)
	}
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool {
		return rdb.XLen(context.Background(), contract.OutboxKey(sale)).Val() == 0
	})
	// Drained, the outbox expires with the sale again.
	if got, want := rdb.PExpireTime(context.Background(), contract.OutboxKey(sale)).Val(), rdb.PExpireTime(context.Background(), contract.MetaKey(sale)).Val(); got != want || got <= 0 {
		t.Errorf("drained outbox expires at %v, want the sale's expiry %v", got, want)
	}
}

func TestGateSellsOneUnitPerUserUnderConcurrentRepeats(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)

	answers := make([]answer, 50)
	parallel(50, func(i int) { answers[i] = buy(t, base, sale, "same-user", "") })

	counts := tally(answers)
	if counts["accepted"] != 1 || counts[contract.CodeAlreadyBought] != 49 {
		t.Fatalf("answers: %s; want accepted=1 already_bought=49", summary(counts))
	}
	var order string
	for _, a := range answers {
		if a.Status == http.StatusAccepted {
			order = a.OrderID
		}
	}
	for _, a := range answers {
		if a.OrderID != order {
			t.Errorf("answer %+v carries order %q, want %q", a, a.OrderID, order)
		}
	}
	if got := stockOf(t, rdb, sale); got != 9 {
		t.Errorf("stock = %d, want 9", got)
	}
}

func TestGateAnswersTheSaleWindowAndUnknownSales(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	future := newSale(t, rdb, 10, time.Hour, 2*time.Hour)
	past := newSale(t, rdb, 10, -2*time.Hour, -time.Hour)

	if a := buy(t, base, future, "u1", ""); a.Status != 403 || a.Code != contract.CodeNotStarted {
		t.Errorf("before start: %+v", a)
	}
	if a := buy(t, base, past, "u1", ""); a.Status != 403 || a.Code != contract.CodeEnded {
		t.Errorf("after end: %+v", a)
	}
	if a := buy(t, base, testenv.ID("nosale"), "u1", ""); a.Status != 404 || a.Code != contract.CodeUnknownSale {
		t.Errorf("unknown sale: %+v", a)
	}
	if a := buy(t, base, future, "", ""); a.Status != 401 || a.Code != contract.CodeUnauthenticated {
		t.Errorf("no user: %+v", a)
	}
	if a := buy(t, base, future, "bad.user", ""); a.Status != 400 || a.Code != contract.CodeBadRequest {
		t.Errorf("bad user id: %+v", a)
	}
	if a := buy(t, base, "bad.sale", "u1", ""); a.Status != 400 || a.Code != contract.CodeBadRequest {
		t.Errorf("bad sale id: %+v", a)
	}
}

func TestGatePurchaseTokenIsSingleUse(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.RequireToken = true
	base := startCaddy(t, cfg)
	sale := newSale(t, rdb, 50, -time.Minute, time.Hour)
	kr := testKeyring(t, "k1")
	issue := func(kr *tokenformat.Keyring, sale, user string, exp time.Time) string {
		tok, c, err := kr.Issue(sale, user, exp)
		if err != nil {
			t.Fatal(err)
		}
		rdb.HSet(ctx, contract.TokensKey(sale), user, tokenformat.StoreValue(c))
		return tok
	}

	// 100 concurrent purchases with one valid token: one reaches the stock decision; the
	// others are told the order it made (the token is spent with it).
	tok := issue(kr, sale, "u1", time.Now().Add(time.Minute))
	answers := make([]answer, 100)
	parallel(100, func(i int) { answers[i] = buy(t, base, sale, "u1", tok) })
	counts := tally(answers)
	if counts["accepted"] != 1 || counts[contract.CodeAlreadyBought] != 99 {
		t.Fatalf("answers: %s; want accepted=1 already_bought=99", summary(counts))
	}
	var order string
	for _, a := range answers {
		if a.Code == "" {
			order = a.OrderID
		}
	}
	for _, a := range answers {
		if a.OrderID != order {
			t.Fatalf("answer %+v does not name the one order %s", a, order)
		}
	}
	if got := stockOf(t, rdb, sale); got != 49 {
		t.Fatalf("stock = %d, want 49", got)
	}
	if rdb.HExists(ctx, contract.TokensKey(sale), "u1").Val() {
		t.Fatal("the token was not spent by the purchase")
	}
	// A token replaced by a newer one (the user asked again) is spent without a purchase.
	replaced := issue(kr, sale, "u6", time.Now().Add(time.Minute))
	newer := issue(kr, sale, "u6", time.Now().Add(2*time.Minute))
	if a := buy(t, base, sale, "u6", replaced); a.Status != 403 || a.Code != contract.CodeTokenUsed {
		t.Fatalf("a replaced token: %+v, want 403 token_used", a)
	}
	if a := buy(t, base, sale, "u6", newer); a.Status != 202 {
		t.Fatalf("the newer token: %+v, want 202", a)
	}

	other := newSale(t, rdb, 5, -time.Minute, time.Hour)
	forged := tok[:len(tok)-2] + "AA"
	expired := issue(kr, sale, "u3", time.Now().Add(-time.Second))
	retired := issue(testKeyring(t, "old"), sale, "u4", time.Now().Add(time.Minute))
	u2 := issue(kr, sale, "u2", time.Now().Add(time.Minute))
	for _, c := range []struct {
		name, sale, user, token, code string
	}{
		{"missing", sale, "u2", "", contract.CodeInvalidToken},
		{"forged", sale, "u1", forged, contract.CodeInvalidToken},
		{"other user", sale, "u5", u2, contract.CodeInvalidToken},
		{"other sale", other, "u2", u2, contract.CodeInvalidToken},
		{"expired", sale, "u3", expired, contract.CodeTokenExpired},
		{"retired key", sale, "u4", retired, contract.CodeInvalidToken},
	} {
		if a := buy(t, base, c.sale, c.user, c.token); a.Status != 403 || a.Code != c.code {
			t.Errorf("%s token: %+v, want 403 %s", c.name, a, c.code)
		}
	}
	if got := stockOf(t, rdb, sale); got != 48 {
		t.Errorf("refused tokens changed the stock to %d", got)
	}
	if got := stockOf(t, rdb, other); got != 5 {
		t.Errorf("refused tokens changed the other sale's stock to %d", got)
	}
	// u2's token was refused elsewhere, so it is still good here.
	if a := buy(t, base, sale, "u2", u2); a.Status != 202 {
		t.Errorf("u2 with its own token: %+v", a)
	}
}

func TestGateFailsClosedWhenRedisIsUnreachable(t *testing.T) {
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.RedisAddr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) // nothing listens
	cfg.Timeout = "300ms"
	for _, mode := range []string{RedisPipelined, RedisPooled} {
		cfg.RedisMode = mode
		t.Run(mode, func(t *testing.T) {
			base := startCaddy(t, cfg)
			a := buy(t, base, "s1", "u1", "")
			if a.Status != 503 || a.Code != contract.CodeUnavailable || a.Retry == "" {
				t.Errorf("Redis down: %+v; want 503 unavailable with Retry-After", a)
			}
		})
	}
}

func TestGateAnswersSoldOutFromMemoryUntilRestock(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	sale := newSale(t, rdb, 1, -time.Minute, time.Hour)
	if a := buy(t, base, sale, "u1", ""); a.Status != 202 {
		t.Fatalf("first buyer: %+v", a)
	}
	if a := buy(t, base, sale, "u2", ""); a.Code != contract.CodeSoldOut {
		t.Fatalf("second buyer: %+v", a)
	}
	// Put a unit back behind the gate's back, without an event: the flag still answers.
	rdb.HSet(context.Background(), contract.MetaKey(sale), "stock", 1)
	if a := buy(t, base, sale, "u3", ""); a.Code != contract.CodeSoldOut {
		t.Fatalf("after sell-out, without a restock event: %+v; want sold_out from memory", a)
	}
	// A restock event (what preheat, compensation and release publish) clears it.
	rdb.Publish(context.Background(), contract.EventsChannel, contract.EventRestock+":"+sale)
	testenv.WaitFor(t, 5*time.Second, "the restock to clear the sold-out flag", func() bool {
		return buy(t, base, sale, "u4", "").Status == 202
	})
}

func TestGateFailsClosedWhenRedisIsSlow(t *testing.T) {
	srv := testenv.StartRedis(t) // private: CLIENT PAUSE would stall everyone on the shared one
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.RedisAddr = srv.Addr()
	cfg.Timeout = "300ms"
	for _, mode := range []string{RedisPipelined, RedisPooled} {
		cfg.RedisMode = mode
		t.Run(mode, func(t *testing.T) {
			base := startCaddy(t, cfg)
			if a := buy(t, base, sale, "warm-"+mode, ""); a.Status != http.StatusAccepted {
				t.Fatalf("before the pause: %+v", a)
			}
			if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", "2000", "ALL").Err(); err != nil {
				t.Fatal(err)
			}
			a := buy(t, base, sale, "slow-"+mode, "")
			if a.Status != http.StatusServiceUnavailable || a.Code != contract.CodeUnavailable || a.Retry == "" {
				t.Errorf("Redis paused: %+v; want 503 unavailable with Retry-After", a)
			}
			_ = rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err()
		})
	}
}

func TestGateShedsInsteadOfPilingUpDecisionsWhenRedisStalls(t *testing.T) {
	srv := testenv.StartRedis(t) // private: the test stalls it
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	sale := newSale(t, rdb, 1000, -time.Minute, time.Hour)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.RedisAddr = srv.Addr()
	cfg.Timeout = "200ms"
	cfg.MaxPending = 4
	base := startCaddy(t, cfg)
	if a := buy(t, base, sale, "warm", ""); a.Status != http.StatusAccepted {
		t.Fatalf("before the stall: %+v", a)
	}
	scripts := func() int64 {
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, l := range strings.Split(info, "\n") {
			for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(l), cmd); ok {
					v, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
					n += v
				}
			}
		}
		return n
	}
	before := scripts()
	if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", "3000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	// Far more buyers than max_pending arrive while Redis is stalled: every one is refused
	// with 503 and Retry-After, and only max_pending decisions are ever sent.
	answers := make([]answer, 40)
	parallel(len(answers), func(i int) { answers[i] = buy(t, base, sale, fmt.Sprintf("stalled-%d", i), "") })
	for _, a := range answers {
		if a.Status != http.StatusServiceUnavailable || a.Code != contract.CodeUnavailable || a.Retry == "" {
			t.Fatalf("Redis stalled: %+v; want 503 unavailable with Retry-After (%s)", a, summary(tally(answers)))
		}
	}
	_ = rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err()
	testenv.WaitFor(t, 10*time.Second, "the gate decides again after the stall", func() bool {
		return buy(t, base, sale, testenv.ID("after"), "").Status == http.StatusAccepted
	})
	if sent := scripts() - before; sent > 4+10 {
		// 4 stalled decisions, plus the few purchases of the wait above.
		t.Fatalf("%d decision scripts reached Redis for 40 stalled buyers with max_pending 4", sent)
	}
	// The shed buyers were never decided: none of them holds a unit.
	bought, err := rdb.HLen(context.Background(), contract.BuyersKey(sale)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if bought > 1+4+10 {
		t.Fatalf("%d buyers recorded; at most the warm-up, 4 stalled decisions and the wait's purchases may be", bought)
	}
}
