//go:build integration

package draw

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/sales"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/drandtest"
)

// clock is a movable clock shared by the runner and the stand-in beacon.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time   { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)  { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }
func newClock(t time.Time) *clock { return &clock{t: t} }

// beaconFixture is a draw sale whose backend names the stand-in beacon b, fetched from urls
// (b's own URL last).
func beaconFixture(t *testing.T, stocks map[string]int, closes time.Time, b *drandtest.Beacon, c *clock, urls ...string) *fixture {
	t.Helper()
	return newFixtureWith(t, stocks, closes, closes, "10m", func(s *sales.Sales, r *Runner) {
		s.Beacon, s.DrandEndpoints = &b.Chain, true
		r.Drand = &Drand{URLs: append(urls, b.URL)}
		r.Now = c.Now
	})
}

func TestADrawWithABeaconWaitsForItsRoundThenRanksWithTheEffectiveSeed(t *testing.T) {
	now := time.Now()
	closes := now.Add(time.Hour)
	c := newClock(now)
	b := drandtest.New("whole draw", 3*time.Second, now.Add(-time.Hour))
	defer b.Close()
	b.Now = c.Now
	stocks := map[string]int{"s38": 3, "s40": 5}
	f := beaconFixture(t, stocks, closes, b, c)
	f.enter(200, []string{"s38", "s40"}, 7)

	// Named at creation, before any entry: the chain and the first round after the close.
	st, err := f.runner.Status(f.ctx, f.pool, f.sale)
	if err != nil || st.Beacon == nil || st.Randomness != drawmath.RandomnessDrand || st.Beacon.ChainHash != b.Chain.ChainHash {
		t.Fatalf("status before the close: %+v %v", st, err)
	}
	round := b.Chain.RoundAfter(closes)
	if st.Beacon.Round != round || !b.Chain.RoundTime(round).After(closes) || b.Chain.RoundTime(round-1).After(closes) {
		t.Fatalf("beacon round %d, want %d (the first after the close)", st.Beacon.Round, round)
	}
	spec, err := f.sales.SaleStatus(f.ctx, f.sale)
	if err != nil || spec.Draw == nil || spec.Draw.Beacon == nil || spec.Draw.Beacon.Round != round {
		t.Fatalf("the sale's admin view does not name the beacon: %+v %v", spec.Draw, err)
	}

	// Run early: the entries close, the root is published, and the draw waits for a round an
	// hour away, without asking the beacon for it.
	if err := f.runner.Run(f.ctx, f.sale, time.Second); !errors.Is(err, ErrBeaconPending) {
		t.Fatalf("a draw before its round: %v", err)
	}
	if n := b.Requests.Load(); n != 0 {
		t.Fatalf("%d requests for a round not due yet", n)
	}
	st, _ = f.runner.Status(f.ctx, f.pool, f.sale)
	if st.State != StateClosed || st.Root == "" || !strings.Contains(st.Waiting, fmt.Sprintf("waiting for beacon round %d", round)) {
		t.Fatalf("status while waiting: %+v", st)
	}
	if seed := f.count(`SELECT count(*) FROM draws WHERE sale_id = $1 AND seed IS NOT NULL`, f.sale); seed != 0 {
		t.Fatal("the seed was revealed before the beacon round")
	}

	// The round is due but late at the beacon: the loop tries, fails, says why, tries again.
	c.Set(b.Chain.RoundTime(round))
	b.Withhold(round)
	for i := 0; i < 2; i++ {
		if _, err := f.runner.Tick(f.ctx); err != nil {
			t.Fatalf("a tick while the round is late: %v", err)
		}
	}
	st, _ = f.runner.Status(f.ctx, f.pool, f.sale)
	if st.State != StateClosed || !strings.Contains(st.Waiting, "HTTP 503") || b.Requests.Load() != 2 {
		t.Fatalf("status while the round is late (%d requests): %+v", b.Requests.Load(), st)
	}

	// The round arrives: the next tick draws with it.
	b.Release(round)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = f.runner.Status(f.ctx, f.pool, f.sale)
	if st.State != StateDrawn || st.Waiting != "" || st.Beacon.Signature != b.Sign(round) {
		t.Fatalf("status after the round: %+v", st)
	}
	// The ranking is EffectiveSeed(seed, chain, round, SHA-256(signature)), computed here from
	// the stand-in's own signature, and not the bare seed's.
	rnd, err := b.Chain.VerifyRound(round, b.Sign(round))
	if err != nil {
		t.Fatal(err)
	}
	eff, _ := drawmath.EffectiveSeed(f.seed(), b.Chain.ChainHash, round, rnd)
	if hex.EncodeToString(eff) != hex.EncodeToString(f.rankSeed()) {
		t.Fatal("the fixture's ranking seed is not the effective seed")
	}
	f.checkDrawn(stocks)
	bare := drawmath.RankVariants(f.seed(), f.live)
	withBeacon := drawmath.RankVariants(eff, f.live)
	if fmt.Sprint(bare["s40"][:5]) == fmt.Sprint(withBeacon["s40"][:5]) {
		t.Fatal("the beacon's ranking is the bare seed's")
	}
}

func TestABeaconEndpointThatIsDownOrLiesIsSkippedForTheNext(t *testing.T) {
	now := time.Now()
	closes := now.Add(-time.Minute)
	c := newClock(now)
	b := drandtest.New("fallback", 3*time.Second, now.Add(-time.Hour))
	defer b.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	forger := drandtest.New("forger", 3*time.Second, now.Add(-time.Hour))
	defer forger.Close()
	// A relay answering every round of b's chain with the forger's signature.
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var round uint64
		fmt.Sscanf(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], "%d", &round)
		_ = json.NewEncoder(w).Encode(map[string]any{"round": round, "signature": forger.Sign(round)})
	}))
	defer liar.Close()
	stocks := map[string]int{"s38": 2}
	f := beaconFixture(t, stocks, closes, b, c, dead.URL, liar.URL)
	f.enter(20, []string{"s38"}, 0)
	if err := f.runner.Run(f.ctx, f.sale, time.Second); err != nil {
		t.Fatalf("the third endpoint has the round: %v", err)
	}
	f.checkDrawn(stocks)

	// With the honest endpoint gone, the liar alone never gets a draw made.
	g := beaconFixture(t, stocks, closes, b, c, liar.URL)
	g.runner.Drand.URLs = []string{liar.URL}
	g.enter(20, []string{"s38"}, 0)
	if err := g.runner.Run(g.ctx, g.sale, time.Second); !errors.Is(err, ErrBeaconPending) || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("a forged round: %v", err)
	}
	st, _ := g.runner.Status(g.ctx, g.pool, g.sale)
	if st.State != StateClosed || !strings.Contains(st.Waiting, "does not verify") {
		t.Fatalf("status with only a lying endpoint: %+v", st)
	}
}
