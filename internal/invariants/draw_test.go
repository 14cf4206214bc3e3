//go:build integration

package invariants_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// drawWorld is a drawn sale built by hand in real Postgres and Redis the way the backend's draw
// leaves it, every number computed with contract/draw: variant a has 2 units and 5 entries,
// variant b 1 unit and 2 entries. In wave 1 of a, the winner at position 0 buys and the one at
// position 1 does not, so wave 2 gives the one unclaimed unit to position 2, who buys; b's
// winner buys in wave 1. A withdrawn entrant stays in Redis only.
type drawWorld struct {
	*world
	seed    []byte
	entries []draw.Entry
	user    map[string]string // entry id -> user
	ranked  map[string][]draw.Ranked
	base    time.Time // wave 1 opens here
	// beacon, when set before fix, is the draw's beacon with its fetched round: the ranking
	// uses its effective seed and the entries close one second before the round is out.
	beacon *draw.Beacon
}

// at is a time of the sale's life, in minutes after wave 1 opened.
func (w *drawWorld) at(minutes float64) time.Time {
	return w.base.Add(time.Duration(minutes * float64(time.Minute)))
}

// winner is the user at position pos of variant v's ranking.
func (w *drawWorld) winner(v string, pos int) string { return w.user[w.ranked[v][pos].ID] }

func newDrawWorld(t *testing.T) *drawWorld { return newDrawWorldWith(t, nil) }

// newDrawWorldWith is newDrawWorld ranked with beacon's round (nil: commit-reveal only).
func newDrawWorldWith(t *testing.T, beacon *draw.Beacon) *drawWorld {
	t.Helper()
	w := &drawWorld{world: newUnitWorld(t, 1, map[string]int{"a": 2, "b": 1}), beacon: beacon}
	w.fix([]string{"a", "b", "a", "a", "b", "a", "a"})
	// Wave 1 of each variant: [0, stock); wave 2 of a: the unit position 1 left unclaimed.
	w.wave("a", 1, 0, 2, 0, 10)
	w.wave("b", 1, 0, 1, 0, 10)
	w.wave("a", 2, 2, 3, 10.1, 20)
	w.buy(w.winner("a", 0), "o-a0", "a", 1)
	w.buy(w.winner("b", 0), "o-b0", "b", 2)
	w.buy(w.winner("a", 2), "o-a2", "a", 11)
	return w
}

// fix stores a drawn draw of entries of the given variants (entry i+1 for variants[i], user
// d<i>) as the close and the draw leave it: the draw row with the revealed seed, the entries
// with their leaves and positions, the tree's nodes, and the Redis draw and entries hashes, with
// a withdrawn entrant in Redis only.
func (w *drawWorld) fix(variants []string) {
	t := w.t
	t.Helper()
	ctx := context.Background()
	w.user, w.seed = map[string]string{}, bytes.Repeat([]byte{0x5e}, 32)
	w.base = time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i, v := range variants {
		e := draw.Entry{ID: fmt.Sprintf(draw.EntryIDFormat, i+1), Variant: v}
		w.entries = append(w.entries, e)
		w.user[e.ID] = fmt.Sprintf("d%d", i)
	}
	draw.SortEntries(w.entries)
	rankSeed, err := draw.RankingSeed(w.seed, w.beacon)
	if err != nil {
		t.Fatal(err)
	}
	w.ranked = draw.RankVariants(rankSeed, w.entries)
	leaves := make([]draw.Hash, len(w.entries))
	for i, e := range w.entries {
		leaves[i] = draw.Leaf(e)
	}
	tree := draw.Build(leaves)
	root := draw.RootOf(w.entries)
	seedHex, commitment := hex.EncodeToString(w.seed), draw.Commitment(w.seed)
	w.exec(`INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, seed_commitment, state, entries, entries_root, seed, closed_at, drawn_at)
		VALUES ($1, $2, $3, 600000, $4, 'drawn', $5, $6, $7, $3, $3)`,
		w.sale, w.at(-60), w.at(-1), commitment, len(w.entries), root, seedHex)
	if b := w.beacon; b != nil {
		named := b.Chain()
		named.Round = b.Round
		chain, _ := json.Marshal(named)
		closes := b.RoundTime(b.Round).Add(-time.Second)
		w.exec(`UPDATE draws SET beacon = $2::jsonb, beacon_signature = $3, beacon_randomness = $4, opens_at = $5, closes_at = $6 WHERE sale_id = $1`,
			w.sale, string(chain), b.Signature, b.Randomness, closes.Add(-time.Hour), closes)
	}
	t.Cleanup(func() {
		// The draw's rows reference the sale: other tests of the same database never see them,
		// but a rerun with the same id must not either.
		for _, table := range []string{"draw_waves", "draw_nodes", "draw_entries", "draws"} {
			_, _ = w.pg.Exec(context.Background(), `DELETE FROM `+table+` WHERE sale_id = $1`, w.sale)
		}
		w.rdb.Del(context.Background(), contract.DrawKey(w.sale), contract.DrawEntriesKey(w.sale))
	})
	posOf := map[string]int{}
	for _, rs := range w.ranked {
		for i, r := range rs {
			posOf[r.ID] = i
		}
	}
	redisEntries := map[string]any{}
	for i, e := range w.entries {
		w.exec(`INSERT INTO draw_entries (sale_id, entry_id, user_id, variant, idx, leaf, pos) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			w.sale, e.ID, w.user[e.ID], e.Variant, i, leaves[i][:], posOf[e.ID])
		redisEntries[w.user[e.ID]] = fmt.Sprintf("%s:%s:%d", e.ID, e.Variant, posOf[e.ID])
	}
	redisEntries["gone"] = fmt.Sprintf(draw.EntryIDFormat, len(variants)+1) + ":" + variants[0] + ":w"
	for level := 1; level < len(tree.Levels); level++ {
		for idx, h := range tree.Levels[level] {
			w.exec(`INSERT INTO draw_nodes (sale_id, level, idx, hash) VALUES ($1, $2, $3, $4)`, w.sale, level, idx, h[:])
		}
	}
	w.rdb.HSet(ctx, contract.DrawKey(w.sale), "seed", seedHex, "commitment", commitment, "state", "drawn", "root", root,
		"entries", len(w.entries), "seq", len(variants)+1)
	w.rdb.HSet(ctx, contract.DrawEntriesKey(w.sale), redisEntries)
}

func (w *drawWorld) wave(v string, n, lo, hi int, from, until float64) {
	w.t.Helper()
	w.exec(`INSERT INTO draw_waves (sale_id, variant, wave, lo, hi, at, claim_until) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		w.sale, v, n, lo, hi, w.at(from), w.at(until))
}

// buy is a winner's purchase as the gate and the consumer record it, accepted at the given
// minute of the sale.
func (w *drawWorld) buy(user, order, v string, minute float64) {
	w.t.Helper()
	if v == "" {
		w.sell(user, order) // a sale without variants
	} else {
		w.sellUnits(user, order, v, 1)
	}
	w.exec(`UPDATE orders SET accepted_at = $2, updated_at = $2 WHERE order_id = $1`, order, w.at(minute))
}

// drawVerdicts runs the whole verifier and returns the numbers of the checks that failed.
func (w *drawWorld) drawVerdicts() (failing []int, checks map[int]invariants.Check) {
	w.t.Helper()
	rep := w.verify(0)
	checks = map[int]invariants.Check{}
	for _, c := range rep.Checks {
		checks[c.N] = c
		if c.Verdict != invariants.Pass {
			failing = append(failing, c.N)
		}
	}
	if len(rep.Checks) != 11 {
		w.t.Fatalf("%d checks, want the 5 invariants and the draw's 6", len(rep.Checks))
	}
	sort.Ints(failing)
	return failing, checks
}

func TestVerifierPassesADrawComputedWithTheContract(t *testing.T) {
	t.Parallel()
	w := newDrawWorld(t)
	failing, checks := w.drawVerdicts()
	if len(failing) != 0 {
		t.Fatalf("invariants %v fail on a correct draw", failing)
	}
	if n := checks[12].Numbers["winners"]; n != 4 {
		t.Fatalf("check 12 counts %d winners, want 4 (a: 2 + 1, b: 1)", n)
	}
	if n := checks[14].Numbers["orders"]; n != 3 {
		t.Fatalf("check 14 saw %d orders, want 3", n)
	}
}

// A sale with a stock and no variants draws one ranking, of the empty variant, and is verified
// by the five invariants of a plain sale plus the draw's.
func TestVerifierPassesADrawWithoutVariants(t *testing.T) {
	t.Parallel()
	w := &drawWorld{world: newWorld(t, 2)}
	w.fix([]string{"", "", "", "", ""})
	w.wave("", 1, 0, 2, 0, 10)
	w.wave("", 2, 2, 3, 10.1, 20)
	w.buy(w.winner("", 1), "o-1", "", 5)
	w.buy(w.winner("", 2), "o-2", "", 12)
	failing, checks := w.drawVerdicts()
	if len(failing) != 0 {
		t.Fatalf("invariants %v fail on a correct draw without variants", failing)
	}
	if n := checks[12].Numbers["winners"]; n != 3 {
		t.Fatalf("check 12 counts %d winners, want 3", n)
	}
	// The same draw, its second wave one place too long: the unit count still decides.
	w.exec(`UPDATE draw_waves SET hi = 4 WHERE sale_id = $1 AND wave = 2`, w.sale)
	if failing, _ := w.drawVerdicts(); !slices.Equal(failing, []int{12}) {
		t.Fatalf("a wave too long: failing %v, want [12]", failing)
	}
}

// Without Redis (the database baselines), the draw is checked in Postgres alone, and still
// passes.
func TestVerifierChecksADrawInPostgresAloneWithoutRedis(t *testing.T) {
	t.Parallel()
	w := newDrawWorld(t)
	w.rdb.HSet(context.Background(), contract.DrawEntriesKey(w.sale), "intruder", w.ranked["b"][0].ID+":b:0")
	src := invariants.Sources{Redis: w.rdb, PG: w.pg, Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: w.vhost}}
	rep, err := invariants.Verify(context.Background(), src, invariants.Run{Sale: w.sale, Accepted: w.accept})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != 11 || !rep.OK() {
		t.Fatalf("without Redis: %d checks, OK %v\n%s", len(rep.Checks), rep.OK(), rep)
	}
	checks, err := invariants.Draw(context.Background(), src, w.sale, true)
	if err != nil || len(checks) != 6 || checks[3].Verdict != invariants.Fail {
		t.Fatalf("invariants.Draw with Redis does not see the intruder: %v %+v", err, checks)
	}
}

// Long after the sale the draw's Redis keys have expired: Postgres alone is checked, and the
// draw still passes.
func TestVerifierPassesADrawWhoseRedisKeysExpired(t *testing.T) {
	t.Parallel()
	w := newDrawWorld(t)
	w.rdb.Del(context.Background(), contract.DrawKey(w.sale), contract.DrawEntriesKey(w.sale))
	if failing, _ := w.drawVerdicts(); len(failing) != 0 {
		t.Fatalf("invariants %v fail once the draw's Redis keys are gone", failing)
	}
}

// Each corruption is what a rigged or broken draw would leave; the listed invariants, and
// only they, must FAIL, naming what is wrong.
func TestVerifierCatchesEachBrokenDrawInvariant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	otherSeed := bytes.Repeat([]byte{0x01}, 32)
	cases := []struct {
		name    string
		failing []int
		corrupt func(w *drawWorld)
	}{
		{"a revealed seed that is not the committed one", []int{10, 12}, func(w *drawWorld) {
			w.exec(`UPDATE draws SET seed = $2 WHERE sale_id = $1`, w.sale, hex.EncodeToString(otherSeed))
			w.rdb.HSet(ctx, contract.DrawKey(w.sale), "seed", hex.EncodeToString(otherSeed))
		}},
		{"an entry's leaf changed after the close", []int{11}, func(w *drawWorld) {
			h := sha256.Sum256([]byte("forged"))
			w.exec(`UPDATE draw_entries SET leaf = $2 WHERE sale_id = $1 AND idx = 3`, w.sale, h[:])
		}},
		{"a stored tree node that is not the entries' tree", []int{11}, func(w *drawWorld) {
			w.exec(`UPDATE draw_nodes SET hash = $2 WHERE sale_id = $1 AND level = 1 AND idx = 1`, w.sale, make([]byte, 32))
		}},
		{"a published root the entries do not open", []int{11}, func(w *drawWorld) {
			w.exec(`UPDATE draws SET entries_root = $2 WHERE sale_id = $1`, w.sale, hex.EncodeToString(make([]byte, 32)))
			w.rdb.HSet(ctx, contract.DrawKey(w.sale), "root", hex.EncodeToString(make([]byte, 32)))
		}},
		{"an entry left out of the close", []int{11, 13}, func(w *drawWorld) {
			last := w.ranked["a"][len(w.ranked["a"])-1].ID // the last-ranked: nobody else moves
			w.exec(`DELETE FROM draw_entries WHERE sale_id = $1 AND entry_id = $2`, w.sale, last)
		}},
		{"two entries' places swapped, a winner with a loser", []int{12}, func(w *drawWorld) {
			win, lose := w.ranked["a"][1], w.ranked["a"][3]
			w.exec(`UPDATE draw_entries SET pos = CASE entry_id WHEN $2 THEN 3 ELSE 1 END WHERE sale_id = $1 AND entry_id IN ($2, $3)`,
				w.sale, win.ID, lose.ID)
			w.rdb.HSet(ctx, contract.DrawEntriesKey(w.sale), w.user[win.ID], win.ID+":a:3", w.user[lose.ID], lose.ID+":a:1")
		}},
		{"a Redis position that is not the seed's", []int{12}, func(w *drawWorld) {
			loser := w.ranked["a"][4]
			w.rdb.HSet(ctx, contract.DrawEntriesKey(w.sale), w.user[loser.ID], loser.ID+":a:0")
		}},
		{"a wave giving more units than were left unclaimed", []int{12}, func(w *drawWorld) {
			w.exec(`UPDATE draw_waves SET hi = 4 WHERE sale_id = $1 AND variant = 'a' AND wave = 2`, w.sale)
		}},
		{"a second wave of a variant whose units were all claimed", []int{12}, func(w *drawWorld) {
			w.wave("b", 2, 1, 2, 10.1, 20)
		}},
		{"another user holding a winner's entry", []int{13}, func(w *drawWorld) {
			e := w.ranked["b"][0]
			w.rdb.HSet(ctx, contract.DrawEntriesKey(w.sale), "intruder", e.ID+":b:0")
		}},
		{"two entries sharing a place", []int{12, 13}, func(w *drawWorld) {
			w.exec(`UPDATE draw_entries SET pos = 0 WHERE sale_id = $1 AND entry_id = $2`, w.sale, w.ranked["a"][4].ID)
		}},
		{"an order by a loser", []int{14}, func(w *drawWorld) {
			loser := w.winner("a", 4)
			w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at, variant_id) VALUES ('o-x', $1, $2, 'failed', 'refused', $3, 'a')`,
				w.sale, loser, w.at(12))
			w.accept = append(w.accept, invariants.Accepted{OrderID: "o-x", UserID: loser, At: time.Now()})
		}},
		{"an order accepted after the winner's claim window", []int{14}, func(w *drawWorld) {
			w.exec(`UPDATE orders SET accepted_at = $1 WHERE order_id = 'o-b0'`, w.at(10).Add(time.Second))
		}},
		{"a variant sold beyond its stock", []int{1, 4, 12, 15}, func(w *drawWorld) {
			// A wave the units did not allow, and its winner bought a unit that was not there.
			w.wave("b", 2, 1, 2, 10.1, 20)
			u := w.winner("b", 1)
			w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at, variant_id) VALUES ('o-b1', $1, $2, 'created', $3, 'b')`,
				w.sale, u, w.at(12))
			w.accept = append(w.accept, invariants.Accepted{OrderID: "o-b1", UserID: u, At: time.Now()})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case breaks a world of its own
			w := newDrawWorld(t)
			tc.corrupt(w)
			failing, checks := w.drawVerdicts()
			if !slices.Equal(failing, tc.failing) {
				t.Fatalf("failing %v, want %v", failing, tc.failing)
			}
			for _, n := range tc.failing {
				if n >= 10 && len(checks[n].Problems) == 0 && checks[n].Detail == "" {
					t.Errorf("invariant %d failed without saying what is wrong", n)
				}
			}
		})
	}
}

// Between the close and the draw (entries fixed, seed secret), the draw passes, and a seed
// already in Postgres is caught: before the draw it must live in Redis alone.
func TestVerifierChecksADrawBetweenTheCloseAndTheDraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := &drawWorld{world: newUnitWorld(t, 1, map[string]int{"a": 2, "b": 1})}
	w.fix([]string{"a", "b", "a"})
	w.exec(`UPDATE draws SET state = 'closed', seed = NULL, drawn_at = NULL WHERE sale_id = $1`, w.sale)
	w.exec(`UPDATE draw_entries SET pos = NULL WHERE sale_id = $1`, w.sale)
	w.rdb.HSet(ctx, contract.DrawKey(w.sale), "state", "closed")
	for _, e := range w.entries {
		w.rdb.HSet(ctx, contract.DrawEntriesKey(w.sale), w.user[e.ID], e.ID+":"+e.Variant)
	}
	if failing, _ := w.drawVerdicts(); len(failing) != 0 {
		t.Fatalf("a closed draw: invariants %v fail", failing)
	}
	w.exec(`UPDATE draws SET seed = $2 WHERE sale_id = $1`, w.sale, hex.EncodeToString(w.seed))
	if failing, _ := w.drawVerdicts(); !slices.Equal(failing, []int{10}) {
		t.Fatalf("a seed in Postgres before the draw: failing %v, want [10]", failing)
	}
}

// quicknetRound123 is drand quicknet's round 123 as https://api.drand.sh publishes it.
func quicknetRound123(t *testing.T) *draw.Beacon {
	t.Helper()
	b := draw.Quicknet
	b.Round = 123
	b.Signature = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92"
	rnd, err := b.VerifyRound(b.Round, b.Signature)
	if err != nil {
		t.Fatal(err)
	}
	b.Randomness = hex.EncodeToString(rnd[:])
	return &b
}

// A draw with a beacon ranks with the one round the rules fix, the first published after its
// close: invariant 10 passes it, and fails a later round (also unknown at the close, but one an
// operator could have picked among several) and quicknet's hash with another genesis.
func TestVerifierRequiresTheBeaconRoundTheRulesFix(t *testing.T) {
	t.Parallel()
	w := newDrawWorldWith(t, quicknetRound123(t))
	if failing, checks := w.drawVerdicts(); len(failing) != 0 {
		t.Fatalf("a true beacon draw: failing %v (%+v)", failing, checks[10])
	}
	b := quicknetRound123(t)
	// Closed 4 s before round 123: round 122 is the first after the close.
	w.exec(`UPDATE draws SET closes_at = $2 WHERE sale_id = $1`, w.sale, b.RoundTime(b.Round).Add(-4*time.Second))
	failing, checks := w.drawVerdicts()
	if !slices.Equal(failing, []int{10}) || !strings.Contains(checks[10].Detail, "not round 122") {
		t.Fatalf("a later round than the first after the close: failing %v, check 10 %q", failing, checks[10].Detail)
	}
	w.exec(`UPDATE draws SET closes_at = $2, beacon = jsonb_set(beacon, '{genesis_time}', to_jsonb($3::bigint)) WHERE sale_id = $1`,
		w.sale, b.RoundTime(b.Round).Add(-time.Second), b.GenesisTime-3)
	failing, checks = w.drawVerdicts()
	if !slices.Contains(failing, 10) || !strings.Contains(checks[10].Detail, "quicknet") {
		t.Fatalf("quicknet's hash with another genesis: failing %v, check 10 %q", failing, checks[10].Detail)
	}
}
