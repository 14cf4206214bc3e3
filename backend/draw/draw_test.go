//go:build integration

package draw

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// fixture is one draw sale in a test's own database and the shared Redis.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	rdb    *redis.Client
	sales  *sales.Sales
	runner *Runner
	sale   string
	// live are the entries written that were not withdrawn, users by entry id.
	live  []drawmath.Entry
	users map[string]string
}

// newFixture creates and preheats a draw sale with the given variants (id -> stock), its
// entries closing at closes and its purchase window from starts for an hour; claim is the
// claim window. Every sale gets a webhook_url, so its events are recorded.
func newFixture(t *testing.T, stocks map[string]int, closes, starts time.Time, claim string) *fixture {
	t.Helper()
	return newFixtureWith(t, stocks, closes, starts, claim, nil)
}

// newFixtureWith is newFixture with a change to the sales and the runner before the sale is
// created (a beacon's chain and endpoints).
func newFixtureWith(t *testing.T, stocks map[string]int, closes, starts time.Time, claim string, setup func(*sales.Sales, *Runner)) *fixture {
	t.Helper()
	return newFixtureSpec(t, stocks, closes, starts, claim, setup, nil)
}

// newFixtureSpec is newFixtureWith with a change to the sale's spec before it is created (the
// draw's waitlist).
func newFixtureSpec(t *testing.T, stocks map[string]int, closes, starts time.Time, claim string, setup func(*sales.Sales, *Runner), change func(*sales.SaleSpec)) *fixture {
	t.Helper()
	ctx := context.Background()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	locker := lock.NewLocker(rdb, 10*time.Second)
	log := slog.New(slog.DiscardHandler)
	sl := &sales.Sales{Pool: pool, Redis: rdb, Locker: locker, Log: log,
		CheckURL: func(context.Context, string) error { return nil }}
	f := &fixture{t: t, ctx: ctx, pool: pool, rdb: rdb, sales: sl, sale: testenv.ID("draw"), users: map[string]string{},
		runner: &Runner{Pool: pool, Redis: rdb, Locker: locker, Log: log}}
	if setup != nil {
		setup(sl, f.runner)
	}
	var vs []sales.VariantSpec
	for id, n := range stocks {
		vs = append(vs, sales.VariantSpec{ID: id, Stock: n})
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].ID < vs[j].ID })
	spec := sales.SaleSpec{ID: f.sale, StartsAt: starts, EndsAt: starts.Add(time.Hour), Variants: vs,
		WebhookURL: "https://shop.example/hooks",
		Draw:       &admin.DrawSpec{OpensAt: closes.Add(-time.Hour), ClosesAt: closes, ClaimWithin: admin.Duration(claim)}}
	if change != nil {
		change(&spec)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(f.sale), contract.DrawKey(f.sale), contract.DrawEntriesKey(f.sale), contract.DrawRaisesKey(f.sale))
		rdb.SRem(context.Background(), contract.SalesIndexKey, f.sale)
	})
	if created, err := sl.CreateSale(ctx, spec); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	res, err := sl.Preheat(ctx, f.sale)
	if err != nil {
		t.Fatal(err)
	}
	if res.Draw == nil || !res.Draw.Created || len(res.Draw.SeedCommitment) != 64 {
		t.Fatalf("preheat of a draw sale: %+v", res.Draw)
	}
	if got := rdb.HGet(ctx, contract.MetaKey(f.sale), "draw").Val(); got != "1" {
		t.Fatalf("meta draw = %q, want 1", got)
	}
	return f
}

// enter writes n entries straight into the entries hash in docs/draw.md's format (the edge's
// part), spreading them over variants; every withdrawEvery-th is withdrawn (0: none).
func (f *fixture) enter(n int, variants []string, withdrawEvery int) {
	f.t.Helper()
	fields := make([]any, 0, 2*n)
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf(drawmath.EntryIDFormat, i+1)
		v := variants[(i*7)%len(variants)]
		user := fmt.Sprintf("u%06d", i)
		val := id + ":" + v
		if withdrawEvery > 0 && i%withdrawEvery == withdrawEvery-1 {
			val += ":w"
		} else {
			f.live = append(f.live, drawmath.Entry{ID: id, Variant: v})
			f.users[id] = user
			counts[v]++
		}
		fields = append(fields, user, val)
		if len(fields) >= 2000 {
			f.rdb.HSet(f.ctx, contract.DrawEntriesKey(f.sale), fields...)
			fields = fields[:0]
		}
	}
	if len(fields) > 0 {
		f.rdb.HSet(f.ctx, contract.DrawEntriesKey(f.sale), fields...)
	}
	for v, c := range counts {
		f.rdb.HSet(f.ctx, contract.DrawKey(f.sale), "n:"+v, c)
	}
	f.rdb.HSet(f.ctx, contract.DrawKey(f.sale), "seq", n)
}

func (f *fixture) seed() []byte {
	f.t.Helper()
	s, err := hex.DecodeString(f.rdb.HGet(f.ctx, contract.DrawKey(f.sale), "seed").Val())
	if err != nil || len(s) != 32 {
		f.t.Fatalf("seed: %v", err)
	}
	return s
}

// expectedWinners is, per variant, the entry ids at positions [lo, hi) of the contract's ranking.
func (f *fixture) ranking() map[string][]drawmath.Ranked {
	return drawmath.RankVariants(f.rankSeed(), f.live)
}

// rankSeed is the seed the ranking must use: the committed seed, or with a beacon the
// effective seed of its stored round (whose signature RankingSeed checks again).
func (f *fixture) rankSeed() []byte {
	f.t.Helper()
	row, err := readBeacon(f.ctx, f.pool, f.sale)
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := drawmath.RankingSeed(f.seed(), row.beacon)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) events(typ string) int {
	return f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = $2`, f.sale, typ)
}

// wave reads meta "w:<variant>".
func (f *fixture) wave(v string) (wave, lo, hi int, until int64) {
	f.t.Helper()
	s := f.rdb.HGet(f.ctx, contract.MetaKey(f.sale), "w:"+v).Val()
	p := strings.Split(s, ":")
	if len(p) != 4 {
		f.t.Fatalf("w:%s = %q", v, s)
	}
	wave, _ = strconv.Atoi(p[0])
	lo, _ = strconv.Atoi(p[1])
	hi, _ = strconv.Atoi(p[2])
	until, _ = strconv.ParseInt(p[3], 10, 64)
	return
}

// checkDrawn checks everything the draw fixed against the contract's arithmetic: the root of
// the sorted live entries (Postgres and Redis), the revealed seed opening the commitment, every
// position (Postgres and the entries hash) and wave 1 of each variant.
func (f *fixture) checkDrawn(stocks map[string]int) {
	f.t.Helper()
	sorted := append([]drawmath.Entry(nil), f.live...)
	drawmath.SortEntries(sorted)
	want := drawmath.RootOf(sorted)
	var root, seed, commitment, state string
	var entries int
	if err := f.pool.QueryRow(f.ctx, `SELECT entries_root, coalesce(seed, ''), seed_commitment, state, entries FROM draws WHERE sale_id = $1`, f.sale).
		Scan(&root, &seed, &commitment, &state, &entries); err != nil {
		f.t.Fatal(err)
	}
	if root != want || entries != len(sorted) {
		f.t.Fatalf("root %s over %d entries, want %s over %d", root, entries, want, len(sorted))
	}
	if got := f.rdb.HGet(f.ctx, contract.DrawKey(f.sale), "root").Val(); got != want {
		f.t.Fatalf("Redis root %s, want %s", got, want)
	}
	if state != StateDrawn && state != StateDone {
		f.t.Fatalf("state %s after the draw", state)
	}
	if !drawmath.Opens(seed, commitment) || seed != hex.EncodeToString(f.seed()) {
		f.t.Fatal("the revealed seed does not open the commitment")
	}
	if got := f.rdb.HGet(f.ctx, contract.DrawKey(f.sale), "state").Val(); got != StateDrawn {
		f.t.Fatalf("Redis state %s", got)
	}
	nodes := 0
	for _, n := range drawmath.LevelSizes(len(sorted))[1:] {
		nodes += n
	}
	if got := f.count(`SELECT count(*) FROM draw_nodes WHERE sale_id = $1`, f.sale); got != nodes {
		f.t.Fatalf("%d tree nodes stored, want %d", got, nodes)
	}
	if ttl := f.rdb.PTTL(f.ctx, contract.DrawEntriesKey(f.sale)).Val(); ttl <= 0 {
		f.t.Fatalf("the entries hash has no expiry (PTTL %v)", ttl)
	}
	entriesHash := f.rdb.HGetAll(f.ctx, contract.DrawEntriesKey(f.sale)).Val()
	for v, rs := range f.ranking() {
		for p, e := range rs {
			var pos, idx int
			if err := f.pool.QueryRow(f.ctx, `SELECT pos, idx FROM draw_entries WHERE sale_id = $1 AND entry_id = $2`, f.sale, e.ID).Scan(&pos, &idx); err != nil {
				f.t.Fatal(err)
			}
			if pos != p || sorted[idx].ID != e.ID {
				f.t.Fatalf("entry %s: pos %d idx %d, want pos %d", e.ID, pos, idx, p)
			}
			if got, want := entriesHash[f.users[e.ID]], fmt.Sprintf("%s:%s:%d", e.ID, v, p); got != want {
				f.t.Fatalf("entries hash %q, want %q", got, want)
			}
		}
		if stocks[v] == 0 {
			continue
		}
		wave, lo, hi, _ := f.wave(v)
		if wave != 1 || lo != 0 || hi != min(len(rs), stocks[v]) {
			f.t.Fatalf("variant %s: wave %d [%d, %d), want 1 [0, %d)", v, wave, lo, hi, min(len(rs), stocks[v]))
		}
	}
}

func TestDrawFixesTheRootRanksEachVariantAndOpensWaveOne(t *testing.T) {
	now := time.Now()
	stocks := map[string]int{"s38": 3, "s40": 5, "s42": 0, "s44": 100}
	f := newFixture(t, stocks, now.Add(time.Hour), now.Add(time.Hour), "10m")
	f.enter(300, []string{"s38", "s40", "s42", "s44"}, 9)
	st, err := f.runner.Status(f.ctx, f.pool, f.sale)
	if err != nil || st.State != StateOpen || st.Entries != int64(len(f.live)) {
		t.Fatalf("status before the close: %+v %v", st, err)
	}
	if err := f.runner.Run(f.ctx, f.sale, time.Second); err != nil {
		t.Fatal(err)
	}
	f.checkDrawn(stocks)
	// The draw was run early: the entries closed then, not at closes_at.
	closes, _ := f.rdb.HGet(f.ctx, contract.DrawKey(f.sale), "closes_ms").Int64()
	if closes > time.Now().UnixMilli() {
		t.Fatalf("closes_ms %d still ahead after an early draw", closes)
	}
	ranking := f.ranking()
	won := 0
	for v, s := range stocks {
		won += min(s, len(ranking[v]))
		_, _, _, until := f.wave(vIfStock(v, s))
		if s > 0 && until != now.Add(time.Hour).Add(10*time.Minute).UnixMilli() {
			t.Fatalf("wave 1 of %s claims until %d, want the start plus 10m", v, until)
		}
	}
	// s44 has more stock than entries: its wave 1 takes them all; s42 has no stock: done at
	// once, every entrant of it lost.
	if got := f.events(contract.EventDrawWon); got != won {
		t.Fatalf("%d draw.won, want %d", got, won)
	}
	if got := f.events(contract.EventDrawLost); got != len(ranking["s42"]) {
		t.Fatalf("%d draw.lost, want the %d entrants of the variant without stock", got, len(ranking["s42"]))
	}
	if f.rdb.HGet(f.ctx, contract.MetaKey(f.sale), "wd:s42").Val() != "1" {
		t.Fatal("a variant without stock is not done")
	}
	var won1 []string
	rows, _ := f.pool.Query(f.ctx, `SELECT entry_id FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.won' AND variant = 's38' ORDER BY entry_id`, f.sale)
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		won1 = append(won1, id)
	}
	var want []string
	for _, r := range ranking["s38"][:3] {
		want = append(want, r.ID)
	}
	sort.Strings(want)
	if fmt.Sprint(won1) != fmt.Sprint(want) {
		t.Fatalf("draw.won of s38 %v, want the three best-ranked %v", won1, want)
	}
	st, err = f.runner.Status(f.ctx, f.pool, f.sale)
	if err != nil || st.State != StateDrawn || st.Entries != int64(len(f.live)) || len(st.Waves) != 3 || st.Root == "" ||
		st.Randomness != drawmath.RandomnessCommitReveal || st.Beacon != nil || st.Waiting != "" {
		t.Fatalf("status after the draw: %+v %v", st, err)
	}
	// A second run changes nothing.
	if err := f.runner.Run(f.ctx, f.sale, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := f.events(contract.EventDrawWon); got != won {
		t.Fatalf("a second run wrote events: %d draw.won", got)
	}
}

func vIfStock(v string, s int) string {
	if s == 0 {
		return "s38" // any variant with a wave: the check is skipped for it
	}
	return v
}

func TestARunStoppedAtEachStepAndRunAgainGivesTheSameRootAndWinners(t *testing.T) {
	for _, step := range []string{"closed", "ranked"} {
		t.Run(step, func(t *testing.T) {
			now := time.Now()
			stocks := map[string]int{"a": 4, "b": 2}
			f := newFixture(t, stocks, now.Add(time.Hour), now.Add(time.Hour), "10m")
			f.enter(120, []string{"a", "b"}, 7)
			crash := errors.New("crash")
			stopping := *f.runner
			stopping.Stop = func(s string) error {
				if s == step {
					return crash
				}
				return nil
			}
			if err := stopping.Run(f.ctx, f.sale, time.Second); !errors.Is(err, crash) {
				t.Fatalf("stopped run: %v", err)
			}
			if got := f.rdb.HGet(f.ctx, contract.DrawKey(f.sale), "state").Val(); got == StateDrawn {
				t.Fatal("the seed was revealed by a run stopped before its end")
			}
			if f.count(`SELECT count(*) FROM draws WHERE sale_id = $1 AND seed IS NULL`, f.sale) != 1 {
				t.Fatal("the seed reached Postgres before the end")
			}
			// An edge write after the close cannot happen (the state is closed); a rerun
			// resumes from Postgres.
			if _, err := f.runner.Tick(f.ctx); err != nil {
				t.Fatal(err)
			}
			f.checkDrawn(stocks)
			if got := f.events(contract.EventDrawWon); got != 6 {
				t.Fatalf("%d draw.won after the resumed run, want 6", got)
			}
		})
	}
}

func TestTheLoopDrawsAtClosesAtAndAdvancesWavesToTheNextRanks(t *testing.T) {
	now := time.Now()
	closes := now.Add(1500 * time.Millisecond)
	stocks := map[string]int{"m": 3, "l": 2}
	// The claim window must outlast the steps between the close and the next tick on a loaded
	// machine: the test checks that wave 1 is still running then.
	f := newFixture(t, stocks, closes, closes, "6s")
	f.enter(40, []string{"m", "l"}, 0)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	// A tick that ended before closes_at must have left the draw open (on a busy machine the
	// fixture alone may take longer than closes_at is away: then there is nothing to check).
	if ticked := time.Now(); ticked.Before(closes) {
		if st, _ := f.runner.Status(f.ctx, f.pool, f.sale); st.State != StateOpen {
			t.Fatalf("state %s before closes_at", st.State)
		}
	}
	time.Sleep(time.Until(closes) + 50*time.Millisecond)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.checkDrawn(stocks)
	ranking := f.ranking()
	// One winner of m buys: the gate took his unit (v:m and stock) and his order reached
	// Postgres. Nobody of l buys.
	buyer := f.users[ranking["m"][1].ID]
	f.rdb.HIncrBy(f.ctx, contract.MetaKey(f.sale), "v:m", -1)
	f.rdb.HIncrBy(f.ctx, contract.MetaKey(f.sale), "stock", -1)
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at, variant_id) VALUES ($1, $2, $3, 'created', now(), 'm')`,
		backendtest.OrderIDAt(t, time.Now()), f.sale, buyer); err != nil {
		t.Fatal(err)
	}
	// Another's purchase was accepted by the gate just in time: buyer in Redis, the order
	// still on its way to Postgres. He bought: no draw.expired for him either.
	inFlight := f.users[ranking["m"][2].ID]
	f.rdb.HIncrBy(f.ctx, contract.MetaKey(f.sale), "v:m", -1)
	f.rdb.HIncrBy(f.ctx, contract.MetaKey(f.sale), "stock", -1)
	f.rdb.HSet(f.ctx, contract.BuyersKey(f.sale), inFlight, "an-order-id")
	// Wave 1 runs: a tick changes nothing.
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	if w, _, _, _ := f.wave("m"); w != 1 {
		t.Fatalf("wave %d before wave 1 ended", w)
	}
	_, _, _, until := f.wave("m")
	time.Sleep(time.Until(time.UnixMilli(until)) + 50*time.Millisecond)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	// m: 1 unclaimed unit goes to position [3, 4); l: 2 to [2, 4).
	for v, want := range map[string][2]int{"m": {3, 4}, "l": {2, 4}} {
		w, lo, hi, _ := f.wave(v)
		if w != 2 || lo != want[0] || hi != want[1] {
			t.Fatalf("variant %s: wave %d [%d, %d), want 2 %v", v, w, lo, hi, want)
		}
	}
	if got := f.events(contract.EventDrawExpired); got != 1+2 {
		t.Fatalf("%d draw.expired, want the 3 wave-1 winners who did not buy", got)
	}
	if got := f.count(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.expired' AND user_id IN ($2, $3)`, f.sale, buyer, inFlight); got != 0 {
		t.Fatal("a buyer was told his win expired")
	}
	if got := f.events(contract.EventDrawWon); got != 5+3 {
		t.Fatalf("%d draw.won, want 5 in wave 1 and 3 in wave 2", got)
	}
	var wonIDs []string
	rows, _ := f.pool.Query(f.ctx, `SELECT entry_id FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.won' AND variant = 'm' AND wave = 2`, f.sale)
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		wonIDs = append(wonIDs, id)
	}
	want := []string{ranking["m"][3].ID}
	sort.Strings(wonIDs)
	sort.Strings(want)
	if fmt.Sprint(wonIDs) != fmt.Sprint(want) {
		t.Fatalf("wave 2 of m made %v winners, want the next ranks %v", wonIDs, want)
	}
	st, err := f.runner.Status(f.ctx, f.pool, f.sale)
	if err != nil || len(st.Waves) != 4 {
		t.Fatalf("status: %+v %v", st, err)
	}
	for _, w := range st.Waves {
		if claimed := map[string]int{"m/1": 1}[fmt.Sprintf("%s/%d", w.Variant, w.Wave)]; w.Claimed != claimed {
			t.Fatalf("wave %+v: claimed %d, want %d", w, w.Claimed, claimed)
		}
	}
	// Nobody claims wave 2 either: all units unsold, no wave gives more than is left. Then the
	// sale ends (the operator ends it now): every variant is done and the rest lose.
	f.rdb.HSet(f.ctx, contract.MetaKey(f.sale), "ends_ms", time.Now().UnixMilli())
	_, _, _, until = f.wave("m")
	time.Sleep(time.Until(time.UnixMilli(until)) + 50*time.Millisecond)
	if _, err := f.runner.Tick(f.ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.runner.Status(f.ctx, f.pool, f.sale); st.State != StateDone {
		t.Fatalf("state %s after the end, want done", st.State)
	}
	lost := len(ranking["m"]) - 4 + len(ranking["l"]) - 4
	if got := f.events(contract.EventDrawLost); got != lost {
		t.Fatalf("%d draw.lost, want %d", got, lost)
	}
	if got := f.events(contract.EventDrawExpired); got != 3+3 {
		t.Fatalf("%d draw.expired, want 6", got)
	}
}

func TestDrawEventsFollowTheOutboxRule(t *testing.T) {
	now := time.Now()
	stocks := map[string]int{"a": 2, "b": 0}
	for _, defaultURL := range []bool{false, true} {
		f := newFixture(t, stocks, now.Add(time.Hour), now.Add(time.Hour), "10m")
		f.enter(20, []string{"a", "b"}, 0)
		// No webhook_url of its own: its events are written only when the backend has a
		// default URL.
		if _, err := f.pool.Exec(f.ctx, `UPDATE sales SET webhook_url = NULL WHERE id = $1`, f.sale); err != nil {
			t.Fatal(err)
		}
		f.runner.DefaultWebhook = defaultURL
		woke := 0
		f.runner.Wake = func() { woke++ }
		if err := f.runner.Run(f.ctx, f.sale, time.Second); err != nil {
			t.Fatal(err)
		}
		f.checkDrawn(stocks)
		won, lost := f.events(contract.EventDrawWon), f.events(contract.EventDrawLost)
		if !defaultURL && (won != 0 || lost != 0 || woke != 0) {
			t.Fatalf("no URL anywhere: %d won, %d lost written, %d wakes", won, lost, woke)
		}
		if defaultURL && (won != 2 || lost != 10 || woke == 0) {
			t.Fatalf("default URL: %d won, %d lost, %d wakes; want 2, 10 and a wake", won, lost, woke)
		}
		if defaultURL {
			var orderID, url string
			if err := f.pool.QueryRow(f.ctx, `SELECT order_id, coalesce(url, '') FROM webhook_deliveries WHERE sale_id = $1 AND type = 'draw.won' LIMIT 1`, f.sale).
				Scan(&orderID, &url); err != nil || !strings.HasPrefix(orderID, "draw:"+f.sale+":u") || url != "" {
				t.Fatalf("a draw event: order_id %q url %q (%v)", orderID, url, err)
			}
		}
	}
}

// A draw whose committed seed is gone from Redis cannot be drawn honestly: a new seed would not
// open the commitment entrants saw. The job stops there (the loop reports it as a failure, the
// operator's run is 409 seed_lost) and the status says why, before and after the close; the
// entries are never ranked, the seed column stays empty.
func TestALostSeedStopsTheDrawForTheOperator(t *testing.T) {
	const otherSeed = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	for _, c := range []struct {
		name   string
		closed bool // the seed is lost after the entries closed
		lose   func(f *fixture)
	}{
		{"deleted before the close", false, func(f *fixture) { f.rdb.HDel(f.ctx, contract.DrawKey(f.sale), "seed") }},
		{"deleted after the close", true, func(f *fixture) { f.rdb.HDel(f.ctx, contract.DrawKey(f.sale), "seed") }},
		{"replaced after the close", true, func(f *fixture) {
			f.rdb.HSet(f.ctx, contract.DrawKey(f.sale), "seed", otherSeed)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now()
			f := newFixture(t, map[string]int{"a": 2}, now.Add(time.Hour), now.Add(time.Hour), "10m")
			f.enter(20, []string{"a"}, 0)
			if c.closed {
				stopping := *f.runner
				stopping.Stop = func(s string) error {
					if s == "closed" {
						return errors.New("stop after the close")
					}
					return nil
				}
				_ = stopping.Run(f.ctx, f.sale, time.Second)
				if f.count(`SELECT count(*) FROM draws WHERE sale_id = $1 AND state = 'closed'`, f.sale) != 1 {
					t.Fatal("the draw did not close")
				}
			}
			c.lose(f)
			if err := f.runner.Run(f.ctx, f.sale, time.Second); !errors.Is(err, lua.ErrSeedLost) {
				t.Fatalf("the draw without its seed: %v, want ErrSeedLost", err)
			}
			// The loop takes a closed draw at every tick (an open one at its closes_at).
			if _, err := f.runner.Tick(f.ctx); c.closed && (err == nil || !strings.Contains(err.Error(), f.sale)) {
				t.Fatalf("the loop passed over the stopped draw silently: %v", err)
			}
			st, err := f.runner.Status(f.ctx, f.pool, f.sale)
			if err != nil || st.Stopped == "" || st.State == StateDrawn || st.State == StateDone {
				t.Fatalf("the operator's view of the stopped draw: %+v %v", st, err)
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/admin/sales/"+f.sale+"/draw", nil)
			req.SetPathValue("id", f.sale)
			f.runner.HandleRun(rec, req)
			if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `"seed_lost"`) {
				t.Fatalf("the operator's run: %d %s, want 409 seed_lost", rec.Code, rec.Body)
			}
			if n := f.count(`SELECT count(*) FROM draw_entries WHERE sale_id = $1 AND pos IS NOT NULL`, f.sale) +
				f.count(`SELECT count(*) FROM draws WHERE sale_id = $1 AND seed IS NOT NULL`, f.sale); n != 0 {
				t.Fatalf("the draw ranked or revealed without its committed seed (%d rows)", n)
			}
		})
	}
}
