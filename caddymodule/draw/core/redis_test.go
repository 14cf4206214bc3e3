//go:build integration

package core

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// newDraw writes a draw sale with variants as the backend's preheat does (its meta and draw
// hashes), open for entries now, and returns its id.
func newDraw(t *testing.T, rdb redis.UniversalClient, dmin, dmax int, variants map[string]int) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("dc")
	now := time.Now()
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	meta := map[string]any{"starts_ms": ms(2 * time.Hour), "ends_ms": ms(3 * time.Hour), "state": "open", "draw": 1,
		contract.FieldVariants: len(variants)}
	stock := 0
	for v, n := range variants {
		meta[contract.VariantField(v)] = n
		stock += n
	}
	meta["stock"] = stock
	pipe := rdb.TxPipeline()
	pipe.HSet(ctx, contract.MetaKey(sale), meta)
	pipe.HSet(ctx, contract.DrawKey(sale), map[string]any{"seed": strings.Repeat("ab", 32), "commitment": strings.Repeat("cd", 32),
		"opens_ms": ms(-time.Minute), "closes_ms": ms(time.Hour), "claim_ms": 60000, "dmin": dmin, "dmax": dmax, "state": "open"})
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.DrawKey(sale), contract.DrawEntriesKey(sale), lua.DrawSpentKey(sale))
	})
	return sale
}

// A sale is read from Redis once within CacheTTL: its window, difficulty and sorted variants;
// a sale that is no draw is remembered as such. After CacheTTL it is read again, and the entry
// counter's growth between the two reads is the entry rate that raises the difficulty.
func TestTheGatewayReadsADrawOnceWithinItsTTLAndMeasuresTheEntryRate(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := newDraw(t, rdb, 0, 8, map[string]int{"42": 3, "41": 2})
	clock := time.Now()
	g := &Gateway{Store: RedisStore{Client: rdb, Caller: edge.Caller{Timeout: 5 * time.Second}}, CacheTTL: 2 * time.Second, DifficultyRate: 1,
		Now: func() time.Time { return clock }}
	c, err := g.Sale(ctx, sale)
	if err != nil || !c.Draw || c.DMin != 0 || c.DMax != 8 || strings.Join(c.Variants, ",") != "41,42" {
		t.Fatalf("read: %+v %v", c, err)
	}
	if !c.Opens.Before(clock) || !c.Closes.After(clock) {
		t.Fatalf("window [%v, %v) does not hold now %v", c.Opens, c.Closes, clock)
	}
	if d := g.Difficulty(c); d != 0 {
		t.Fatalf("difficulty %d with no entries yet, want dmin 0", d)
	}
	for i := range 40 {
		rep, err := g.Store.Enter(ctx, lua.DrawEnterCall{Sale: sale, User: "u" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Variant: "42"})
		if err != nil || rep.Code != 0 {
			t.Fatalf("entry %d: %+v %v", i, rep, err)
		}
	}
	if again, _ := g.Sale(ctx, sale); again != c {
		t.Fatal("read again within the TTL")
	}
	clock = clock.Add(4 * time.Second)
	c2, err := g.Sale(ctx, sale)
	if err != nil || c2 == c || c2.Seq-c.Seq != 40 {
		t.Fatalf("after the TTL: %+v %v (entries counted %d, want 40)", c2, err, c2.Seq-c.Seq)
	}
	// 40 entries in 4 s is 10 a second, three doublings and more beyond difficulty_rate 1.
	if d, want := g.Difficulty(c2), sealed.Difficulty(0, 8, 10, 1); d != want || d < 3 {
		t.Fatalf("difficulty %d at 10 entries a second over a rate of 1, want %d (at least 3 bits)", d, want)
	}
	st, err := g.Store.Status(ctx, lua.DrawStatusCall{Sale: sale, User: "uaa"})
	if err != nil || st.Code != 0 || st.State != "entered" || st.Variant != "42" {
		t.Fatalf("status: %+v %v", st, err)
	}
	other := testenv.ID("nd")
	if n, err := g.Sale(ctx, other); err != nil || n.Draw {
		t.Fatalf("a sale that is no draw: %+v %v", n, err)
	}
}
