//go:build integration

package draw

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// A draw with the waitlist (docs/draw.md, "The waitlist"), through two gateway servers (each
// its own seckill_draw instance): every winner of wave 1 buys, then one after the other their
// units are released as the backend's compensation does (compensate.lua). Each release raises
// the wave by one rank at once, and the next rank, polling his page every 20 ms on his
// gateway, is told "won" in wave 1 with a claim window; nobody below him is. The log has the
// time from each release to the next rank's page saying won (the measured run of
// BENCHMARKS.md: SECKILL_WAITLIST_UNITS=50).
var waitlistGateway = gateway(gatewayConfig{Two: true})

// Serial: it logs the time from each release to the page, the measure BENCHMARKS.md quotes.
func TestADrawReleaseReachesTheNextRanksPageThroughTwoGateways(t *testing.T) {
	units := 10
	if v, err := strconv.Atoi(os.Getenv("SECKILL_WAITLIST_UNITS")); err == nil && v > units {
		units = v
	}
	rdb := testenv.Redis(t)
	ctx := context.Background()
	a, b := waitlistGateway.Two(t)
	gw := [2]string{a, b}

	// A draw as the backend leaves it once drawn: 2 x units entries of size a, ranked by their
	// number, wave 1 giving the first units ranks, the waitlist on.
	sale := testenv.ID("dw")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(context.Background(), append(lua.GateCall{Sale: sale}.Keys(), contract.DrawKey(sale), contract.DrawRaisesKey(sale),
			contract.CompensatedKey(sale))...)
	})
	if created, _, err := (lua.PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Minute,
		Variants: []lua.Variant{{ID: "a", Stock: int64(units)}}}).Run(ctx, rdb); err != nil || !created {
		t.Fatalf("preheat: %v %v", created, err)
	}
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	rdb.HSet(ctx, contract.MetaKey(sale), "draw", "1", "w:a", fmt.Sprintf("1:0:%d:%d", units, ms(10*time.Minute)))
	rdb.HSet(ctx, contract.DrawKey(sale), map[string]any{"seed": "00", "commitment": "11", "opens_ms": ms(-time.Hour), "closes_ms": ms(-2 * time.Minute),
		"claim_ms": 600000, "dmin": 0, "dmax": 0, "state": "drawn", "waitlist": 1, "n:a": 2 * units, "seq": 2 * units})
	user := func(pos int) string { return fmt.Sprintf("r%03d", pos) }
	for pos := range 2 * units {
		rdb.HSet(ctx, contract.DrawEntriesKey(sale), user(pos), fmt.Sprintf("%08x:a:%d", pos+1, pos))
	}
	for pos := range units {
		res, err := lua.GateCall{Sale: sale, User: user(pos), OrderID: "o-" + user(pos), Variant: "a"}.Run(ctx, rdb)
		if err != nil || res[0].(int64) != 0 {
			t.Fatalf("winner %d buys: %v %v", pos, res, err)
		}
	}
	if got := status(t, gw[1], sale, user(units)); got.Status != 200 || got.State != "waiting" {
		t.Fatalf("the first rank past wave 1 before any release: %s", got.Raw)
	}

	// The next ranks poll, each on his gateway; the releases follow one another 50 ms apart.
	released := make([]time.Time, units)
	wonAt := make([]time.Time, units)
	var mu sync.Mutex
	var wg sync.WaitGroup
	pollCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	for i := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pollCtx.Err() == nil {
				r := status(t, gw[i%2], sale, user(units+i))
				if r.State == "won" {
					mu.Lock()
					wonAt[i] = time.Now()
					mu.Unlock()
					if r.Wave != 1 || r.ClaimUntil == "" {
						t.Errorf("rank %d: %s, want won in wave 1 with a claim window", units+i, r.Raw)
					}
					return
				}
				if r.State != "waiting" {
					t.Errorf("rank %d: %s, want waiting until his raise", units+i, r.Raw)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	for i := range units {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		released[i] = time.Now()
		mu.Unlock()
		if done, _, err := (lua.CompensateCall{Sale: sale, OrderID: "o-" + user(i), User: user(i), Variant: "a"}).Run(ctx, rdb); err != nil || !done {
			t.Fatalf("release %d: %v %v", i, done, err)
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Rank units+i won only after the i-th release: one rank per released unit, in rank order.
	var took []time.Duration
	for i := range units {
		if wonAt[i].IsZero() || wonAt[i].Before(released[i]) {
			t.Fatalf("rank %d won at %v, his raise's release at %v", units+i, wonAt[i], released[i])
		}
		took = append(took, wonAt[i].Sub(released[i]))
	}
	if got := status(t, gw[0], sale, user(2*units-1)); units > 1 && got.State != "won" {
		t.Fatalf("the last raised rank: %s", got.Raw)
	}
	if n := rdb.LLen(ctx, contract.DrawRaisesKey(sale)).Val(); n != int64(units) {
		t.Fatalf("%d raises logged for %d releases", n, units)
	}
	slices.Sort(took)
	pct := func(q float64) time.Duration {
		return took[min(len(took)-1, int(q*float64(len(took))))].Round(100 * time.Microsecond)
	}
	t.Logf("release to the next rank's page saying won (polled every 20 ms, two gateway servers), %d releases: median %v, p99 %v, max %v",
		units, pct(0.5), pct(0.99), took[len(took)-1].Round(100*time.Microsecond))
}
