//go:build integration

package gate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// drawSale writes a drawn draw sale directly in Redis, as the backend leaves it after the draw
// (docs/draw.md): a selling sale with the given variants and a limit of 1, meta draw = 1, the
// draw hash drawn. The test writes the waves (drawWave) and the entries (drawEntry).
func drawSale(t testing.TB, rdb *redis.Client, variants ...lua.Variant) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("ds")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(context.Background(), append(lua.GateCall{Sale: sale}.Keys(), contract.DrawKey(sale))...)
	})
	if _, _, err := (lua.PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Variants: variants, Namespace: testNamespace}).Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, contract.MetaKey(sale), "draw", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, contract.DrawKey(sale), "seed", "00", "state", "drawn").Err(); err != nil {
		t.Fatal(err)
	}
	return sale
}

// drawWave makes [lo, hi) of variant's ranking its current wave, claimable until until.
func drawWave(t testing.TB, rdb *redis.Client, sale, variant string, wave, lo, hi int, until time.Time) {
	t.Helper()
	v := fmt.Sprintf("%d:%d:%d:%d", wave, lo, hi, until.UnixMilli())
	if err := rdb.HSet(context.Background(), contract.MetaKey(sale), "w:"+variant, v).Err(); err != nil {
		t.Fatal(err)
	}
}

// drawEntry writes user's entry: "<entry_id>:<variant>" and ":w" or ":<pos>" as given.
func drawEntry(t testing.TB, rdb *redis.Client, sale, user, value string) {
	t.Helper()
	if err := rdb.HSet(context.Background(), contract.DrawEntriesKey(sale), user, value).Err(); err != nil {
		t.Fatal(err)
	}
}

// The claims of a draw through the handler: a winner buys his size within his window (202),
// naming it or not; another size, and everyone without a live win, is 403 not_admitted with a
// message about the draw (not the room's); after the window the winner is refused too, and once
// wave 2 opens its winner buys while the expired winner of wave 1 still cannot.
func TestGateHTTPDrawSellsToLiveWinnersOnly(t *testing.T) {
	rdb := testenv.Redis(t)
	g, _ := inProcessGate(t, rdb)
	sale := drawSale(t, rdb, lua.Variant{ID: "S", Stock: 1}, lua.Variant{ID: "M", Stock: 2})
	drawWave(t, rdb, sale, "S", 1, 0, 1, time.Now().Add(time.Minute))
	drawWave(t, rdb, sale, "M", 1, 0, 2, time.Now().Add(time.Minute))
	drawEntry(t, rdb, sale, "ann", "00000001:M:0")
	drawEntry(t, rdb, sale, "bob", "00000002:M:1")
	drawEntry(t, rdb, sale, "cat", "00000003:S:1") // waiting
	drawEntry(t, rdb, sale, "dan", "00000004:S:w") // withdrawn
	drawEntry(t, rdb, sale, "eve", "00000005:S")   // entered, not drawn
	drawEntry(t, rdb, sale, "sam", "00000006:S:0")

	notWon := func(who string, a variantAnswer) {
		t.Helper()
		if a.Status != 403 || a.Code != contract.CodeNotAdmitted || !strings.Contains(a.Raw, "draw") {
			t.Fatalf("%s: %d %s, want 403 not_admitted about the draw", who, a.Status, a.Raw)
		}
	}
	notWon("a winner of M buying S", buyBody(t, g, sale, "ann", `{"variant":"S"}`))
	if a := buyBody(t, g, sale, "ann", `{"variant":"M"}`); a.Status != 202 || a.Variant != "M" {
		t.Fatalf("a winner of M buying M: %d %s", a.Status, a.Raw)
	}
	if a := buyBody(t, g, sale, "ann", `{"variant":"M"}`); a.Status != 409 || a.Code != contract.CodeAlreadyBought {
		t.Fatalf("the winner again: %d %s", a.Status, a.Raw)
	}
	if a := buyBody(t, g, sale, "bob", ""); a.Status != 202 || a.Variant != "M" {
		t.Fatalf("a winner naming no variant: %d %s, want the variant he won", a.Status, a.Raw)
	}
	for _, u := range []string{"cat", "dan", "eve", "fay"} {
		notWon(u+" naming S", buyBody(t, g, sale, u, `{"variant":"S"}`))
		notWon(u+" naming none", buyBody(t, g, sale, u, ""))
	}

	// Sam's window ends unclaimed; wave 2 of S gives the unit to cat.
	drawWave(t, rdb, sale, "S", 1, 0, 1, time.Now().Add(-time.Millisecond))
	notWon("a winner after his window", buyBody(t, g, sale, "sam", ""))
	drawWave(t, rdb, sale, "S", 2, 1, 2, time.Now().Add(time.Minute))
	notWon("wave 1's winner in wave 2", buyBody(t, g, sale, "sam", `{"variant":"S"}`))
	if a := buyBody(t, g, sale, "cat", ""); a.Status != 202 || a.Variant != "S" {
		t.Fatalf("wave 2's winner: %d %s", a.Status, a.Raw)
	}
	if n := stockOf(t, rdb, sale); n != 0 {
		t.Fatalf("stock %d, want 0: the three winners bought the three units", n)
	}
	if n := rdb.XLen(context.Background(), contract.OutboxKey(sale)).Val(); n != 3 {
		t.Fatalf("%d orders in the outbox, want 3", n)
	}
}

// staleScripts is a Redis client of a gateway out of date with the scripts: it passes at most
// n keys, so gate.lua never sees the draw's entries.
type staleScripts struct {
	*redis.Client
	n int
}

func (s staleScripts) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return s.Client.EvalSha(ctx, sha, keys[:min(len(keys), s.n)], args...)
}

func (s staleScripts) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.Client.Eval(ctx, script, keys[:min(len(keys), s.n)], args...)
}

// A draw sale whose script call lacks the entries key sells to nobody, winner or not: 503
// unavailable for the client, outcome draw_missing counted and an error line naming the sale
// for the operator.
func TestGateHTTPDrawSaleWithoutItsEntriesKeyIs503AndLogged(t *testing.T) {
	rdb := testenv.Redis(t)
	g, _ := inProcessGate(t, rdb)
	obs, logs := observer.New(zap.WarnLevel)
	g.logger = zap.New(obs)
	g.decider.Store = core.RedisStore{R: staleScripts{Client: rdb, n: 7}}
	sale := drawSale(t, rdb, lua.Variant{ID: "S", Stock: 1})
	drawWave(t, rdb, sale, "S", 1, 0, 1, time.Now().Add(time.Minute))
	drawEntry(t, rdb, sale, "ann", "00000001:S:0")
	counter := decisions.WithLabelValues(sale, string(core.DrawMissing))
	before := testutil.ToFloat64(counter)

	a := buyBody(t, g, sale, "ann", `{"variant":"S"}`)
	if a.Status != 503 || a.Code != contract.CodeUnavailable {
		t.Fatalf("a draw sale without its entries key: %d %s", a.Status, a.Raw)
	}
	if d := testutil.ToFloat64(counter) - before; d != 1 {
		t.Fatalf("draw_missing counted %v times", d)
	}
	found := false
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "draw") && e.ContextMap()["sale"] == sale {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log line names the sale and the draw: %v", logs.All())
	}
	if n := stockOf(t, rdb, sale); n != 1 {
		t.Fatalf("stock %d, want 1", n)
	}
}

// Winners and everyone else race through two gate handlers on the same Redis, each user
// several times, naming his size, another one or none: exactly the winners get 202, once each,
// up to the stock of their size (M's wave is wider than its units left: its late winners get
// sold_out), and nothing is oversold.
func TestGateHTTPDrawConcurrentClaimsThroughTwoGates(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	g1, _ := inProcessGate(t, rdb)
	g2, _ := inProcessGate(t, rdb)
	const sStock, mStock, mWave = 30, 15, 20
	sale := drawSale(t, rdb, lua.Variant{ID: "S", Stock: sStock}, lua.Variant{ID: "M", Stock: mStock})
	until := time.Now().Add(time.Minute)
	drawWave(t, rdb, sale, "S", 1, 0, sStock, until)
	drawWave(t, rdb, sale, "M", 1, 0, mWave, until)

	winners := map[string]string{} // user -> variant won
	var users []string
	pipe := rdb.Pipeline()
	add := func(user, value string) {
		users = append(users, user)
		pipe.HSet(ctx, contract.DrawEntriesKey(sale), user, value)
	}
	id := 0
	for v, n := range map[string]int{"S": 2 * sStock, "M": 2 * mWave} {
		for pos := range n {
			id++
			u := fmt.Sprintf("%s%d", v, pos)
			add(u, fmt.Sprintf("%08x:%s:%d", id, v, pos))
			if (v == "S" && pos < sStock) || (v == "M" && pos < mWave) {
				winners[u] = v
			}
		}
	}
	for i := range 20 {
		id++
		add("w"+strconv.Itoa(i), fmt.Sprintf("%08x:S:w", id))
		users = append(users, "x"+strconv.Itoa(i)) // never entered
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	type result struct {
		user string
		a    variantAnswer
	}
	results := make(chan result, len(users)*3)
	var wg sync.WaitGroup
	for i, u := range users {
		for try := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g := g1
				if (i+try)%2 == 1 {
					g = g2
				}
				body := ""
				switch try {
				case 1:
					body = `{"variant":"S"}`
				case 2:
					body = `{"variant":"M"}`
				}
				results <- result{u, buyBody(t, g, sale, u, body)}
			}()
		}
	}
	wg.Wait()
	close(results)

	accepted := map[string]int{}
	soldOut := 0
	for r := range results {
		switch {
		case r.a.Status == 202:
			accepted[r.user]++
			if w, ok := winners[r.user]; !ok || r.a.Variant != w {
				t.Errorf("%s bought %q; won %q", r.user, r.a.Variant, w)
			}
		case r.a.Code == contract.CodeSoldOut:
			// Once a size (or the sale) is gone the gates' sold-out memory answers before
			// Redis, to anyone: only a refusal, never a sale.
			soldOut++
		case r.a.Code != contract.CodeNotAdmitted && r.a.Code != contract.CodeAlreadyBought:
			t.Errorf("%s: %d %s", r.user, r.a.Status, r.a.Raw)
		}
	}
	bought := map[string]int{}
	for u, n := range accepted {
		if n != 1 {
			t.Errorf("%s accepted %d times", u, n)
		}
		bought[winners[u]]++
	}
	if bought["S"] != sStock || bought["M"] != mStock {
		t.Fatalf("bought %v, want S %d (every winner) and M %d (its units)", bought, sStock, mStock)
	}
	for u, v := range winners {
		if v == "S" && accepted[u] != 1 {
			t.Errorf("winner %s of S never bought", u)
		}
	}
	if soldOut < mWave-mStock {
		t.Fatalf("%d sold_out answers: M's %d late winners were not all told", soldOut, mWave-mStock)
	}
	meta := rdb.HMGet(ctx, contract.MetaKey(sale), "stock", "v:S", "v:M").Val()
	if meta[0] != "0" || meta[1] != "0" || meta[2] != "0" {
		t.Fatalf("meta stock, v:S, v:M = %v, want all 0", meta)
	}
	if n := rdb.HLen(ctx, contract.BuyersKey(sale)).Val(); n != sStock+mStock {
		t.Fatalf("%d buyers, want %d", n, sStock+mStock)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(sale)).Val(); n != sStock+mStock {
		t.Fatalf("%d orders in the outbox, want %d", n, sStock+mStock)
	}
}
