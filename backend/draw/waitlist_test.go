//go:build integration

package draw

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/lua"
)

// buy does what the gate and the order writer do for a winner's purchase: the unit leaves the
// variant's stock, the user becomes a buyer, his order is created in Postgres.
func (f *fixture) buy(user, variant string) string {
	f.t.Helper()
	order := backendtest.OrderIDAt(f.t, time.Now())
	f.rdb.HIncrBy(f.ctx, contract.MetaKey(f.sale), "v:"+variant, -1)
	f.rdb.HIncrBy(f.ctx, contract.MetaKey(f.sale), "stock", -1)
	f.rdb.HSet(f.ctx, contract.BuyersKey(f.sale), user, order)
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at, variant_id) VALUES ($1, $2, $3, 'created', now(), $4)`,
		order, f.sale, user, variant); err != nil {
		f.t.Fatal(err)
	}
	return order
}

// release ends an order as status (failed: a refused payment; cancelled: an unpaid timeout or a
// cancellation) and compensates it as the backend does.
func (f *fixture) release(comp *orders.Compensator, order, user, variant, status string) {
	f.t.Helper()
	if _, err := f.pool.Exec(f.ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE order_id = $1`, order, status); err != nil {
		f.t.Fatal(err)
	}
	if n := comp.Compensate(f.ctx, []orders.OrderRef{{OrderID: order, SaleID: f.sale, UserID: user, Variant: variant}}); n != 1 {
		f.t.Fatalf("compensation returned %d units, want 1", n)
	}
}

// endWave moves the end of a variant's current wave to now, in Redis and in Postgres (time
// passing, without the test waiting a claim window).
func (f *fixture) endWave(v string, wave, lo, hi int) {
	f.t.Helper()
	// After every purchase the test made (an order accepted at the end's very millisecond would
	// fall outside the window), and not after Redis TIME.
	time.Sleep(5 * time.Millisecond)
	now := time.Now().Truncate(time.Millisecond)
	f.rdb.HSet(f.ctx, contract.MetaKey(f.sale), "w:"+v, strconv.Itoa(wave)+":"+strconv.Itoa(lo)+":"+strconv.Itoa(hi)+":"+strconv.FormatInt(now.UnixMilli(), 10))
	if _, err := f.pool.Exec(f.ctx, `UPDATE draw_waves SET claim_until = $4 WHERE sale_id = $1 AND variant = $2 AND wave = $3`, f.sale, v, wave, now); err != nil {
		f.t.Fatal(err)
	}
}

// A draw with the waitlist: a winner's released unit goes to the next rank of its size at once,
// long before the wave's claim window ends (a minute here); the raise is recorded once (a
// retried compensation raises nothing), the new winner hears draw.won and unit.offered, and,
// when he does not buy, unit.passed at the wave's end. A unit released after its wave ended with
// nothing unsold opens the next wave at once.
func TestADrawWaitlistGivesAReleasedUnitToTheNextRankWithoutWaitingForTheDeadline(t *testing.T) {
	closes := time.Now().Add(time.Second)
	stocks := map[string]int{"m": 2, "l": 1}
	f := newFixtureSpec(t, stocks, closes, closes, "1m", nil, func(s *sales.SaleSpec) { s.Draw.Waitlist = true })
	comp := &orders.Compensator{Pool: f.pool, Redis: f.rdb, Log: f.runner.Log, Released: f.runner.Released}
	f.enter(30, []string{"m", "l"}, 0)
	if got := f.rdb.HGet(f.ctx, contract.DrawKey(f.sale), "waitlist").Val(); got != "1" {
		t.Fatalf("draw hash waitlist = %q, want 1", got)
	}
	time.Sleep(time.Until(closes) + 50*time.Millisecond)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.checkDrawn(stocks)
	rank := f.ranking()["m"]
	user := func(i int) string { return f.users[rank[i].ID] }
	o0 := f.buy(user(0), "m")
	o1 := f.buy(user(1), "m")
	_, _, _, until1 := f.wave("m")

	// Rank 0's payment is refused: rank 2 wins now, with a full claim window.
	start := time.Now()
	f.release(comp, o0, user(0), "m", "failed")
	w, lo, hi, until := f.wave("m")
	if w != 1 || lo != 0 || hi != 3 || until < until1 {
		t.Fatalf("wave of m after a release: %d [%d, %d) until %d, want 1 [0, 3) until >= %d", w, lo, hi, until, until1)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the raise took %s", time.Since(start))
	}
	if got := f.rdb.HGet(f.ctx, contract.DrawEntriesKey(f.sale), user(0)).Val(); !strings.HasSuffix(got, ":r") {
		t.Fatalf("the releasing winner's entry %q, want it marked released", got)
	}
	st, err := (lua.DrawStatusCall{Sale: f.sale, User: user(2)}).Run(f.ctx, f.rdb)
	if err != nil || st.State != "won" || st.Wave != 1 {
		t.Fatalf("rank 2's page: %+v %v, want won in wave 1", st, err)
	}
	check := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: %d, want %d", what, got, want)
		}
	}
	check("draw_raises rows", f.count(`SELECT count(*) FROM draw_raises WHERE sale_id = $1 AND variant = 'm' AND wave = 1 AND pos = 2 AND order_id = $2`, f.sale, o0), 1)
	check("wave 1 of m in Postgres reaching rank 2", f.count(`SELECT count(*) FROM draw_waves WHERE sale_id = $1 AND variant = 'm' AND wave = 1 AND hi = 3`, f.sale), 1)
	check("draw.won of rank 2", f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.won' AND user_id = $2 AND wave = 1`, f.sale, user(2)), 1)
	check("unit.offered of rank 2", f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'unit.offered' AND user_id = $2`, f.sale, user(2)), 1)

	// The backend retries the compensation (compensated_at lost): nothing more is raised.
	if _, err := f.pool.Exec(f.ctx, `UPDATE orders SET compensated_at = NULL WHERE order_id = $1`, o0); err != nil {
		t.Fatal(err)
	}
	if _, err := comp.RetryPending(f.ctx, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, hi, _ := f.wave("m"); hi != 3 {
		t.Fatalf("a retried release raised the wave again: hi %d", hi)
	}
	check("raises after a retry", f.count(`SELECT count(*) FROM draw_raises WHERE sale_id = $1`, f.sale), 1)
	check("unit.offered after a retry", f.events(contract.EventUnitOffered), 1)

	// Rank 2 does not buy; the wave's window ends (moved to now): wave 1 is over with one unit
	// unsold, so wave 2 opens on rank 3, rank 2 is told draw.expired and unit.passed.
	f.endWave("m", 1, 0, 3)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	if w, lo, hi, _ := f.wave("m"); w != 2 || lo != 3 || hi != 4 {
		t.Fatalf("wave of m: %d [%d, %d), want 2 [3, 4)", w, lo, hi)
	}
	check("unit.passed of rank 2", f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'unit.passed' AND user_id = $2`, f.sale, user(2)), 1)
	check("draw.expired of rank 2", f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.expired' AND user_id = $2`, f.sale, user(2)), 1)
	check("draw.expired of the released rank 0", f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.expired' AND user_id = $2`, f.sale, user(0)), 1)

	// Rank 3 buys: m has nothing unsold. Its window ends: m waits (not done) for a release.
	f.buy(user(3), "m")
	f.endWave("m", 2, 3, 4)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	check("m done", f.count(`SELECT count(*) FROM draw_variants WHERE sale_id = $1 AND variant = 'm' AND done_at IS NOT NULL`, f.sale), 0)
	if f.rdb.HExists(f.ctx, contract.MetaKey(f.sale), "wd:m").Val() {
		t.Fatal("m marked done while a unit may still come back")
	}
	// Rank 1 never pays: his unit opens wave 3 on rank 4 at once, not at a deadline.
	f.release(comp, o1, user(1), "m", "cancelled")
	if w, lo, hi, _ := f.wave("m"); w != 3 || lo != 4 || hi != 5 {
		t.Fatalf("wave of m after a release past its wave: %d [%d, %d), want 3 [4, 5)", w, lo, hi)
	}
	check("draw.won of rank 4", f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.won' AND user_id = $2 AND wave = 3`, f.sale, user(4)), 1)
	check("wave 3 in Postgres", f.count(`SELECT count(*) FROM draw_waves WHERE sale_id = $1 AND variant = 'm' AND wave = 3 AND lo = 4 AND hi = 5`, f.sale), 1)

	// The invariants hold: waves, orders, no variant oversold, every raise one released unit.
	cs, err := invariants.Draw(f.ctx, invariants.Sources{Redis: f.rdb, PG: f.pool}, f.sale, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, c := range cs {
		if c.Verdict != invariants.Pass {
			t.Errorf("invariant %d %s: %s %v", c.N, c.Name, c.Verdict, c.Problems)
		}
		if c.N == 16 {
			seen = true
			if c.Numbers["raises"] != 1 {
				t.Errorf("invariant 16 counts %d raises, want 1", c.Numbers["raises"])
			}
		}
	}
	if !seen {
		t.Error("no waitlist invariant for a draw with the waitlist")
	}
}
