//go:build integration

package gate

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

func newOrderID(t testing.TB) string {
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

func TestGateScriptAnswersUnknownSaleWithoutError(t *testing.T) {
	rdb := testenv.Redis(t)
	v, err := core.Decide(context.Background(), rdb, core.Purchase{Target: testenv.ID("nosale"), Request: core.Request{User: "u1"}, OrderID: newOrderID(t)})
	if err != nil || v.Outcome != core.UnknownSale {
		t.Fatalf("Decide on a missing sale = %+v, %v; want unknown_sale and no error", v, err)
	}
}

func TestGateDecidesTheSaleWindowByRedisTime(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	future := newSale(t, rdb, 10, time.Hour, 2*time.Hour)
	past := newSale(t, rdb, 10, -2*time.Hour, -time.Hour)
	for _, c := range []struct {
		sale string
		want core.Outcome
	}{{future, core.NotStarted}, {past, core.Ended}} {
		v, err := core.Decide(ctx, rdb, core.Purchase{Target: c.sale, Request: core.Request{User: "u1"}, OrderID: newOrderID(t)})
		if err != nil || v.Outcome != c.want {
			t.Errorf("sale %s: %+v, %v; want %s", c.sale, v, err, c.want)
		}
		if got := stockOf(t, rdb, c.sale); got != 10 {
			t.Errorf("a refusal changed the stock to %d", got)
		}
		if n := rdb.Exists(ctx, contract.BuyersKey(c.sale)).Val(); n != 0 {
			t.Errorf("a refusal wrote the buyers hash")
		}
		if n := rdb.XLen(ctx, contract.OutboxKey(c.sale)).Val(); n != 0 {
			t.Errorf("a refusal wrote %d outbox entries", n)
		}
	}
}

func TestGateAcceptWritesStockBuyerOutboxAndExpiries(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := newSale(t, rdb, 2, -time.Minute, time.Hour)
	// Preheat made the outbox, empty, with the relay's group from id 0 and the sale's expiry.
	metaExp := rdb.PExpireTime(ctx, contract.MetaKey(sale)).Val()
	if n, err := rdb.XLen(ctx, contract.OutboxKey(sale)).Result(); err != nil || n != 0 {
		t.Fatalf("outbox after preheat: %d entries, %v; want an empty stream", n, err)
	}
	if got := rdb.PExpireTime(ctx, contract.OutboxKey(sale)).Val(); got != metaExp {
		t.Errorf("an empty preheated outbox expires at %v, the meta at %v", got, metaExp)
	}
	groups := rdb.XInfoGroups(ctx, contract.OutboxKey(sale)).Val()
	if len(groups) != 1 || groups[0].Name != core.RelayGroup || groups[0].LastDeliveredID != "0-0" {
		t.Fatalf("outbox groups after preheat = %+v, want the relay group from id 0", groups)
	}
	order := newOrderID(t)
	v, err := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "alice"}, OrderID: order})
	if err != nil || v.Outcome != core.Accepted || v.OrderID != order || v.StockLeft != 1 {
		t.Fatalf("first purchase = %+v, %v", v, err)
	}
	if got := rdb.HGet(ctx, contract.BuyersKey(sale), "alice").Val(); got != order {
		t.Errorf("buyers[alice] = %q, want %q", got, order)
	}
	entries := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val()
	if len(entries) != 1 || entries[0].Values["o"] != order || entries[0].Values["u"] != "alice" {
		t.Fatalf("outbox = %+v", entries)
	}
	if got := rdb.PExpireTime(ctx, contract.BuyersKey(sale)).Val(); got != metaExp || got <= 0 {
		t.Errorf("buyers expire at %v, meta at %v: they must expire together", got, metaExp)
	}
	if got := rdb.PTTL(ctx, contract.OutboxKey(sale)).Val(); got != -1 {
		t.Errorf("an outbox with entries has TTL %v; it must not expire before it is drained", got)
	}
	// The entry sits after the group's last delivered id: the relay reads it.
	groups = rdb.XInfoGroups(ctx, contract.OutboxKey(sale)).Val()
	if len(groups) != 1 || groups[0].Name != core.RelayGroup || groups[0].LastDeliveredID != "0-0" || groups[0].Lag != 1 {
		t.Errorf("outbox groups after the purchase = %+v, want the relay group with the entry to read", groups)
	}

	// The same purchase retried (a lost reply, go-redis retrying): accepted again, nothing written twice.
	v, err = core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "alice"}, OrderID: order})
	if err != nil || v.Outcome != core.Accepted || v.OrderID != order {
		t.Fatalf("retried purchase = %+v, %v; want accepted with the same order", v, err)
	}
	if got := stockOf(t, rdb, sale); got != 1 {
		t.Errorf("stock after a retried purchase = %d, want 1", got)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(sale)).Val(); n != 1 {
		t.Errorf("outbox length after a retried purchase = %d, want 1", n)
	}

	// Another order of the same user: already bought, with the first order id.
	v, _ = core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "alice"}, OrderID: newOrderID(t)})
	if v.Outcome != core.AlreadyBought || v.OrderID != order {
		t.Errorf("second purchase = %+v; want already_bought with %s", v, order)
	}

	// The last unit, then sold out.
	if v, _ = core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "bob"}, OrderID: newOrderID(t)}); v.Outcome != core.Accepted || v.StockLeft != 0 {
		t.Fatalf("last unit = %+v", v)
	}
	if v, _ = core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "carol"}, OrderID: newOrderID(t)}); v.Outcome != core.SoldOut {
		t.Fatalf("after the last unit = %+v, want sold_out", v)
	}
	if got := stockOf(t, rdb, sale); got != 0 {
		t.Errorf("stock = %d, want 0", got)
	}
}

func TestGateScriptConsumesATokenOnlyWithAPurchase(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	kr := testKeyring(t, "k1")
	sale := newSale(t, rdb, 1, -time.Minute, time.Hour)
	issue := func(user string) string {
		_, c, err := kr.Issue(sale, user, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		v := tokenformat.StoreValue(c)
		rdb.HSet(ctx, contract.TokensKey(sale), user, v)
		return v
	}
	// Not issued (or another nonce): token_used, nothing written.
	issue("u1")
	if v, _ := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u1"}, OrderID: newOrderID(t), TokenValue: "bogus:1"}); v.Outcome != core.TokenUsed {
		t.Fatalf("unknown nonce = %+v, want token_used", v)
	}
	tv := issue("u1")
	if v, _ := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u1"}, OrderID: newOrderID(t), TokenValue: tv}); v.Outcome != core.Accepted {
		t.Fatalf("valid token = %+v, want accepted", v)
	}
	if rdb.HExists(ctx, contract.TokensKey(sale), "u1").Val() {
		t.Error("the token was not consumed by the purchase")
	}
	// Refused for sold out: u2's token stays usable.
	tv2 := issue("u2")
	if v, _ := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u2"}, OrderID: newOrderID(t), TokenValue: tv2}); v.Outcome != core.SoldOut {
		t.Fatalf("u2 = %+v, want sold_out", v)
	}
	if got := rdb.HGet(ctx, contract.TokensKey(sale), "u2").Val(); got != tv2 {
		t.Errorf("a refused purchase consumed the token (now %q)", got)
	}
}

func TestCheckRequestRefusesBadIdentitiesBeforeRedis(t *testing.T) {
	cases := []struct {
		sale, user string
		want       core.Outcome
	}{
		{"s1", "", core.Unauthenticated},
		{"s1", "u 1", core.BadRequest},
		{"", "u1", core.BadRequest},
		{"s/1", "u1", core.BadRequest},
		{"s1", string(make([]byte, 65)), core.BadRequest},
		{"s1", "u_1-A", ""},
	}
	for _, c := range cases {
		if got := core.CheckRequest(c.sale, c.user); got != c.want {
			t.Errorf("CheckRequest(%q, %q) = %q, want %q", c.sale, c.user, got, c.want)
		}
	}
}

func TestEveryOutcomeHasTheContractStatus(t *testing.T) {
	want := map[core.Outcome]int{
		core.Accepted: 202, core.Unauthenticated: 401, core.BadRequest: 400, core.UnknownSale: 404, core.NotStarted: 403, core.Ended: 403,
		core.InvalidToken: 403, core.TokenExpired: 403, core.TokenUsed: 403, core.SoldOut: 409, core.AlreadyBought: 409, core.Unavailable: http.StatusServiceUnavailable,
		core.Paused: http.StatusServiceUnavailable, core.NotAdmitted: 403,
		core.Misconfigured: http.StatusServiceUnavailable, core.RoomMissing: http.StatusServiceUnavailable,
		core.DrawMissing: http.StatusServiceUnavailable,
	}
	for o, s := range want {
		if o.Status() != s {
			t.Errorf("%s: status %d, want %d", o, o.Status(), s)
		}
	}
}

// The buyers hash gets the sale's expiry once, with the sale's first purchase, not on every
// purchase: an expiry moved since (the window control, preheat) stays where it was put, and a
// hash found without one (made again after compensation emptied it) gets the sale's at the
// relay's next drain (lua/outbox_ack.lua).
func TestGateSetsTheBuyersExpiryOnceAndTheDrainMendsAHashWithout(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := newSale(t, rdb, 10, -time.Minute, time.Hour)
	metaExp := rdb.PExpireTime(ctx, contract.MetaKey(sale)).Val()
	if v, err := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u1"}, OrderID: newOrderID(t)}); err != nil || v.Outcome != core.Accepted {
		t.Fatalf("first purchase = %+v, %v", v, err)
	}
	if got := rdb.PExpireTime(ctx, contract.BuyersKey(sale)).Val(); got != metaExp {
		t.Fatalf("buyers made by the first purchase expire at %v, want the meta's %v", got, metaExp)
	}
	moved := time.UnixMilli(metaExp.Milliseconds()).Add(time.Hour)
	rdb.PExpireAt(ctx, contract.BuyersKey(sale), moved)
	if v, err := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u2"}, OrderID: newOrderID(t)}); err != nil || v.Outcome != core.Accepted {
		t.Fatalf("second purchase = %+v, %v", v, err)
	}
	if got := rdb.PExpireTime(ctx, contract.BuyersKey(sale)).Val(); got.Milliseconds() != moved.UnixMilli() {
		t.Errorf("a purchase reset the buyers' expiry to %v (it was %v)", got.Milliseconds(), moved.UnixMilli())
	}
	// A buyers hash without an expiry gets the sale's when the relay drains the outbox.
	rdb.Persist(ctx, contract.BuyersKey(sale))
	if v, err := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u3"}, OrderID: newOrderID(t)}); err != nil || v.Outcome != core.Accepted {
		t.Fatalf("third purchase = %+v, %v", v, err)
	}
	entries, err := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Result()
	if err != nil || len(entries) != 3 {
		t.Fatalf("outbox holds %d entries (%v), want 3", len(entries), err)
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if _, err := (lua.OutboxAckCall{Sale: sale, Group: "relay", Retention: time.Minute, IDs: ids}).Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if got := rdb.PExpireTime(ctx, contract.BuyersKey(sale)).Val(); got != metaExp {
		t.Errorf("buyers found without an expiry expire at %v after the drain, want the meta's %v", got, metaExp)
	}
}

// A sale preheated by an older backend (the meta key only): the purchase still writes its
// entry, to a stream the gate makes without a group; the relay creates the group from id 0
// (caddymodule/relay: TestARelayDeliversAnOutboxPreheatedWithoutItsGroup).
func TestGateAcceptsASalePreheatedWithoutItsOutbox(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 3, now.Add(-time.Minute).UnixMilli(),
		now.Add(time.Hour).UnixMilli(), "init", time.Hour.Milliseconds(), "", testNamespace).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale), contract.OutboxKey(sale))
	})
	if n := rdb.Exists(ctx, contract.OutboxKey(sale)).Val(); n != 0 {
		t.Fatal("a preheat without the outbox key made the outbox")
	}
	order := newOrderID(t)
	if v, err := core.Decide(ctx, rdb, core.Purchase{Target: sale, Request: core.Request{User: "u1"}, OrderID: order}); err != nil || v.Outcome != core.Accepted {
		t.Fatalf("purchase = %+v, %v", v, err)
	}
	entries := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val()
	if len(entries) != 1 || entries[0].Values["o"] != order {
		t.Fatalf("outbox = %+v, want the purchase's entry", entries)
	}
	if got := rdb.PTTL(ctx, contract.OutboxKey(sale)).Val(); got != -1 {
		t.Errorf("an outbox with entries has TTL %v", got)
	}
}
