//go:build integration

package lua

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// variantSale preheats a selling sale with variants and a per-user limit and removes its keys
// at the end.
func variantSale(t *testing.T, rdb *redis.Client, limit int, variants ...Variant) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(ctx, GateCall{Sale: sale}.Keys()...)
	})
	created, stock, err := PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Limit: limit, Variants: variants}.Run(ctx, rdb)
	if err != nil || !created {
		t.Fatalf("preheat: %v %v", created, err)
	}
	var sum int64
	for _, v := range variants {
		sum += v.Stock
	}
	if len(variants) > 0 && stock != sum {
		t.Fatalf("preheat stock %d, want the sum of the variants %d", stock, sum)
	}
	return sale
}

func buyItem(t *testing.T, rdb *redis.Client, sale, user, order, variant string, q int) []any {
	t.Helper()
	res, err := GateCall{Sale: sale, User: user, OrderID: order, Group: "relay", Variant: variant, Quantity: q}.Run(context.Background(), rdb)
	if err != nil {
		t.Fatalf("gate: %v", err)
	}
	return res
}

func code(res []any) int64 { return res[0].(int64) }

func TestPreheatWithVariantsSetsTheTotalAndEachVariant(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 3, Variant{"red", 4}, Variant{"blue", 6})
	meta := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta["stock"] != "10" || meta["v:red"] != "4" || meta["v:blue"] != "6" || meta["variants"] != "2" || meta["limit"] != "3" {
		t.Fatalf("meta %v", meta)
	}
	if _, ok := meta["variant"]; ok {
		t.Fatal("a sale with two variants has no default variant")
	}
	now := time.Now()
	a := PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Minute,
		Variants: []Variant{{"green", 1}}}
	// init keeps a sale that is in Redis as it is.
	if created, stock, err := a.Run(ctx, rdb); err != nil || created || stock != 10 {
		t.Fatalf("second init preheat = %v %d %v, want the sale untouched", created, stock, err)
	}
	// reset sets everything: the old variants and limit go.
	a.Reset = true
	if created, stock, err := a.Run(ctx, rdb); err != nil || !created || stock != 1 {
		t.Fatalf("reset preheat = %v %d %v", created, stock, err)
	}
	meta = rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta["v:green"] != "1" || meta["variant"] != "green" || meta["variants"] != "1" || meta["v:red"] != "" || meta["limit"] != "" {
		t.Fatalf("meta after reset %v", meta)
	}
	bad := []PreheatCall{
		{Sale: sale, Starts: now, Ends: now.Add(time.Hour), Variants: []Variant{{"a b", 1}}},
		{Sale: sale, Starts: now, Ends: now.Add(time.Hour), Variants: []Variant{{"a", -1}}},
		{Sale: sale, Starts: now, Ends: now.Add(time.Hour), Variants: []Variant{{"a", 1}, {"a", 2}}},
		{Sale: sale, Starts: now, Ends: now.Add(time.Hour), Limit: 1001},
		{Sale: sale, Starts: now, Ends: now.Add(time.Hour), Shards: 4, Variants: []Variant{{"a", 1}}},
	}
	for i, b := range bad {
		if _, _, err := b.Run(ctx, rdb); err == nil {
			t.Errorf("bad preheat %d accepted: %+v", i, b)
		}
	}
	many := make([]Variant, contract.MaxVariants+1)
	for i := range many {
		many[i] = Variant{"v" + strconv.Itoa(i), 1}
	}
	if _, _, err := (PreheatCall{Sale: sale, Starts: now, Ends: now.Add(time.Hour), Variants: many}).Run(ctx, rdb); err == nil {
		t.Error("257 variants accepted")
	}
}

// Every refusal of the variant rules changes nothing; the accepted purchase writes the stock of
// the variant and the total, the held units and sequence, the buyer and the outbox entry.
func TestGateVariantRules(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 2, Variant{"red", 1}, Variant{"blue", 5})
	cases := []struct {
		name    string
		variant string
		q       int
		want    []any
	}{
		{"unknown variant", "green", 1, []any{int64(11), "variant"}},
		{"no variant on a sale with two", "", 1, []any{int64(11), "variant"}},
		{"quantity above the limit", "blue", 3, []any{int64(11), "quantity"}},
		{"quantity zero", "blue", -1, []any{int64(11), "quantity"}},
		{"more than the variant has", "red", 2, []any{int64(6), "red", int64(1)}},
	}
	for _, c := range cases {
		got := buyItem(t, rdb, sale, "u1", "o-"+c.name, c.variant, c.q)
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
	if n := rdb.Exists(ctx, contract.BuyersKey(sale), contract.HeldKey(sale)).Val(); n != 0 {
		t.Fatalf("%d keys written by refusals", n)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(sale)).Val(); n != 0 {
		t.Fatalf("%d outbox entries written by refusals", n) // (preheat made the stream, empty)
	}

	got := buyItem(t, rdb, sale, "u1", "o1", "red", 1)
	if code(got) != 0 || got[1] != "o1" || got[2] != int64(5) || got[3] != "red" || got[4] != int64(1) || got[5] != int64(1) {
		t.Fatalf("accepted = %v, want [0 o1 5 red 1 1]", got)
	}
	// The retried call (same order id) answers accepted again and writes nothing.
	if again := buyItem(t, rdb, sale, "u1", "o1", "red", 1); code(again) != 0 || again[1] != "o1" {
		t.Fatalf("retried call = %v", again)
	}
	// red is gone, blue still sells; the user holds 1 of 2.
	if got := buyItem(t, rdb, sale, "u2", "o2", "red", 1); code(got) != 6 || got[1] != "red" || got[2] != int64(0) {
		t.Fatalf("red after its last unit = %v, want [6 red 0]", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o3", "blue", 2); code(got) != 12 || got[1] != int64(1) {
		t.Fatalf("above the limit = %v, want [12 1] (limit_reached, held 1)", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o4", "blue", 1); code(got) != 0 || got[5] != int64(2) {
		t.Fatalf("second purchase = %v, want accepted with seq 2", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o5", "blue", 1); code(got) != 12 || got[1] != int64(2) {
		t.Fatalf("at the limit = %v, want [12 2]", got)
	}
	meta := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	held := rdb.HGetAll(ctx, contract.HeldKey(sale)).Val()
	if meta["stock"] != "4" || meta["v:red"] != "0" || meta["v:blue"] != "4" || held["u1"] != "2" || held["#u1"] != "2" {
		t.Fatalf("meta %v held %v", meta, held)
	}
	if b := rdb.HGet(ctx, contract.BuyersKey(sale), "u1").Val(); b != "o4" {
		t.Fatalf("buyers holds %q, want the latest order o4", b)
	}
	if ttl := rdb.PTTL(ctx, contract.HeldKey(sale)).Val(); ttl <= 0 {
		t.Fatalf("the held hash must expire with the sale, PTTL %v", ttl)
	}
	entries := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val()
	if len(entries) != 2 {
		t.Fatalf("%d outbox entries, want 2", len(entries))
	}
	e := entries[1].Values
	if e["o"] != "o4" || e["u"] != "u1" || e["v"] != "blue" || e["q"] != nil || e["n"] != "2" || e["t"] == nil {
		t.Fatalf("outbox entry %v", e)
	}
}

// A sale with one variant needs no variant named; with a limit of 1 a second purchase is
// already_bought with the order, as on a sale without variants.
func TestGateSingleVariantSaleTakesItsVariantAndKeepsAlreadyBought(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	sale := variantSale(t, rdb, 1, Variant{"only", 3})
	if got := buyItem(t, rdb, sale, "u1", "o1", "", 0); code(got) != 0 || got[3] != "only" || got[4] != int64(1) {
		t.Fatalf("accepted = %v, want variant only quantity 1", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o2", "only", 1); code(got) != 5 || got[1] != "o1" {
		t.Fatalf("second purchase = %v, want [5 o1]", got)
	}
	if got := buyItem(t, rdb, sale, "u2", "o3", "", 2); code(got) != 11 || got[1] != "quantity" {
		t.Fatalf("quantity 2 on a limit of 1 = %v", got)
	}
}

// A sale without variants and with limit 1 is decided as it always was: no held hash, the
// outbox entry has exactly o, u, t, and a variant or a quantity above 1 is refused.
func TestGateSimpleSaleIsUnchanged(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := openSale(t, rdb, 2)
	t.Cleanup(func() { rdb.Del(ctx, contract.HeldKey(sale)) })
	if got := buyItem(t, rdb, sale, "u1", "o1", "red", 1); code(got) != 11 || got[1] != "variant" {
		t.Fatalf("a variant on a sale without variants = %v", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o1", "", 2); code(got) != 11 || got[1] != "quantity" {
		t.Fatalf("quantity 2 on a limit of 1 = %v", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o1", "", 1); len(got) != 3 || code(got) != 0 || got[2] != int64(1) {
		t.Fatalf("accepted = %v, want today's [0 o1 1]", got)
	}
	if got := gate(t, rdb, sale, "u1", "o2", ""); len(got) != 2 || code(got) != 5 || got[1] != "o1" {
		t.Fatalf("second purchase = %v, want [5 o1]", got)
	}
	if rdb.Exists(ctx, contract.HeldKey(sale)).Val() != 0 {
		t.Fatal("a simple sale wrote a held hash")
	}
	e := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val()
	if len(e) != 1 || len(e[0].Values) != 3 {
		t.Fatalf("outbox %v, want one entry of o, u, t", e)
	}
}

// A limit above 1 without variants: quantities, held units and the sequence.
func TestGateLimitWithoutVariants(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 3)
	now := time.Now()
	if _, _, err := (PreheatCall{Sale: sale, Stock: 4, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Limit: 3, Reset: true}).Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if got := buyItem(t, rdb, sale, "u1", "o1", "", 2); code(got) != 0 || got[2] != int64(2) || got[3] != "" || got[5] != int64(1) {
		t.Fatalf("accepted = %v", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o2", "", 2); code(got) != 12 || got[1] != int64(2) {
		t.Fatalf("above the limit = %v", got)
	}
	if got := buyItem(t, rdb, sale, "u2", "o3", "", 3); code(got) != 6 || got[1] != "" || got[2] != int64(2) {
		t.Fatalf("more than the stock = %v, want [6 '' 2]", got)
	}
	e := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val()
	if len(e) != 1 || e[0].Values["q"] != "2" || e[0].Values["n"] != nil || e[0].Values["v"] != nil {
		t.Fatalf("outbox %v", e)
	}
}

// 200 concurrent buyers of one variant (2 units each, limit 2) and of another never take more
// than each variant holds, and the variant that sells out publishes its event while the
// other still sells.
func TestGateConcurrentBuyersNeverOversellAVariant(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 2, Variant{"hot", 51}, Variant{"cold", 1000})
	sub := rdb.Subscribe(ctx, contract.EventsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const buyers = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	units := map[string]int64{}
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := "u" + strconv.Itoa(i)
			variant := "hot"
			if i%4 == 0 {
				variant = "cold"
			}
			res, err := GateCall{Sale: sale, User: user, OrderID: "o" + strconv.Itoa(i), Group: "relay", Variant: variant, Quantity: 2}.Run(ctx, rdb)
			if err != nil {
				t.Error(err)
				return
			}
			if res[0].(int64) == 0 {
				mu.Lock()
				units[variant] += 2
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	meta := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if units["hot"] != 50 || meta["v:hot"] != "1" {
		t.Fatalf("hot: %d units sold, %s left; want 50 sold of 51, 1 left", units["hot"], meta["v:hot"])
	}
	if units["cold"] != 100 || meta["v:cold"] != "900" || meta["stock"] != "901" {
		t.Fatalf("cold: %d sold, meta %v", units["cold"], meta)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(sale)).Val(); n != 75 {
		t.Fatalf("%d outbox entries, want 75", n)
	}
	// The last unit of hot goes to a buyer of 1: the variant event, not the sale's.
	if got := buyItem(t, rdb, sale, "last", "o-last", "hot", 1); code(got) != 0 {
		t.Fatalf("last unit: %v", got)
	}
	want := "sold_out:" + sale + "/hot"
	deadline := time.After(5 * time.Second)
	for {
		select {
		case msg := <-sub.Channel():
			if msg.Payload == "sold_out:"+sale {
				t.Fatal("the sale was announced sold out while a variant still sells")
			}
			if msg.Payload == want {
				if got := buyItem(t, rdb, sale, "late", "o-late", "cold", 1); code(got) != 0 {
					t.Fatalf("the other variant after hot sold out: %v", got)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no %q event", want)
		}
	}
}

// On a sale with a limit above 1 a buyer gets a token again (the gate checks his units); with
// a limit of 1 he is told his order, as before.
func TestTokenIssueLetsABuyerBuyAgainUnderALimit(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	for _, c := range []struct {
		limit int
		want  string
	}{{2, "issued"}, {1, "already_bought"}} {
		sale := variantSale(t, rdb, c.limit, Variant{"red", 5})
		if got := buyItem(t, rdb, sale, "u1", "o1", "red", 1); code(got) != 0 {
			t.Fatalf("purchase: %v", got)
		}
		if got := issue(t, rdb, sale, "u1"); got[0] != c.want {
			t.Fatalf("limit %d: token for a buyer = %v, want %s", c.limit, got, c.want)
		}
	}
}

// With a limit of 1 a sale with variants keeps no held hash: the buyers hash is the truth, so a
// buyer of one size cannot buy another, and a purchase writes what a simple sale's does plus
// the variant's field. Compensation then frees the buyer as on a simple sale.
func TestGateLimitOneVariantSaleKeepsNoHeldHash(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := variantSale(t, rdb, 1, Variant{"s42", 2}, Variant{"s43", 2})
	if got := buyItem(t, rdb, sale, "u1", "o1", "s42", 0); code(got) != 0 || got[3] != "s42" || got[5] != int64(1) {
		t.Fatalf("accepted = %v, want variant s42, seq 1", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o2", "s43", 1); code(got) != 5 || got[1] != "o1" {
		t.Fatalf("another size for the same buyer = %v, want already_bought [5 o1]", got)
	}
	if got := buyItem(t, rdb, sale, "u1", "o1", "s42", 1); code(got) != 0 || got[5] != int64(0) {
		t.Fatalf("the retried call = %v, want accepted with seq 0 (nothing written)", got)
	}
	if n := rdb.Exists(ctx, contract.HeldKey(sale)).Val(); n != 0 {
		t.Fatalf("a limit-1 sale wrote a held hash: %v", rdb.HGetAll(ctx, contract.HeldKey(sale)).Val())
	}
	meta := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta["stock"] != "3" || meta["v:s42"] != "1" || meta["v:s43"] != "2" {
		t.Fatalf("meta after one purchase %v", meta)
	}
	entries := rdb.XRange(ctx, contract.OutboxKey(sale), "-", "+").Val()
	if len(entries) != 1 || entries[0].Values["v"] != "s42" || entries[0].Values["q"] != nil || entries[0].Values["n"] != nil {
		t.Fatalf("outbox %v, want one entry with v=s42 and neither q nor n", entries)
	}
	// Compensation (as the backend runs it, with the held key it always passes) frees the user.
	res, err := Compensate.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.BuyersKey(sale),
		contract.CompensatedKey(sale), contract.HeldKey(sale)}, sale, "o1", "u1", "s42", "").Int64Slice()
	if err != nil || res[0] != 1 || res[1] != 4 {
		t.Fatalf("compensate = %v %v", res, err)
	}
	if got := buyItem(t, rdb, sale, "u1", "o3", "s43", 1); code(got) != 0 {
		t.Fatalf("after compensation the user buys again: %v", got)
	}
}
