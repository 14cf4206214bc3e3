package invariants

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
)

// The six invariants of a sale in draw mode (docs/draw.md), checked from what
// the draw left in Postgres (draws, draw_entries, draw_nodes, draw_waves and the sale's orders)
// and in Redis (the draw hash and the entries hash under the sale's hash tag):
//
//	10. the revealed seed opens the commitment published at preheat;
//	11. the fixed entries open the published root, and the stored tree is the tree of them;
//	12. every position, in Postgres and in Redis, and every wave is the seed's ranking: the
//	    winners of each wave are the next best-ranked entries of the variant, as many as the
//	    units left unclaimed at the end of the wave before;
//	13. no user wins twice: one entry per user, one position per entry;
//	14. every order of the sale belongs to a winner of its variant, accepted inside his wave;
//	15. no variant oversold.
//
// Each check recomputes the draw with contract/draw, the arithmetic the backend ran, from the
// stored entries and seed alone: a check that trusted the stored positions or tree would pass a
// draw that was rigged after the fact.

// drawEntry is one row of draw_entries.
type drawEntry struct {
	id, user, variant string
	idx               int
	leaf              []byte
	pos               int // -1: NULL (not drawn)
}

// drawWave is one row of draw_waves.
type drawWave struct {
	variant   string
	wave      int
	lo, hi    int
	at, until time.Time
}

// drawRaise is one row of draw_raises: a released order gave position pos to wave.
type drawRaise struct {
	order, variant string
	wave, pos      int
	until, at      time.Time
}

// drawOrder is one order of the sale, with what the draw checks need.
type drawOrder struct {
	id, user, variant, status string
	qty                       int
	accepted, updated         time.Time
}

// drawState is what the draw checks read, in one snapshot.
type drawState struct {
	state, commitment, seedHex, root string
	entryCount                       int // draws.entries; -1 when NULL
	entries                          []drawEntry
	nodes                            map[[2]int][]byte // (level, idx) -> hash
	waves                            map[string][]drawWave
	orders                           []drawOrder
	stock                            map[string]int // variant -> units the sale had
	checkRedis                       bool
	redisDraw, redisEntries          map[string]string
	// redisFlagged: the flagged entrants (contract.DrawFlaggedKey), whom the close leaves out.
	redisFlagged map[string]bool
	redisErr     error
	redisGone    bool // the sale's draw keys expired: nothing to compare

	// waitlist: the draw hands released units to the next ranks (draws.waitlist); raises are
	// its draw_raises rows by variant, redisRaises the raises log in Redis.
	waitlist    bool
	raises      map[string][]drawRaise
	redisRaises []string

	// beacon is the draw's public beacon with its fetched round (nil: commit-reveal only);
	// beaconErr why the ranking's seed could not be derived from it.
	beacon    *draw.Beacon
	beaconErr error
	// closes is the draw's closes_at, which fixes its beacon round.
	closes time.Time

	// Recomputed from the stored entries and seed (nil when the seed is not revealed); the
	// ranking uses the effective seed when the draw has a beacon.
	seed    []byte
	ranking map[string][]draw.Ranked
	posOf   map[string]int // entry id -> recomputed position in its variant
}

// drawn reports whether the seed should be revealed and the waves running.
func (d *drawState) drawn() bool { return d.state == "drawn" || d.state == "done" }

// fixed reports whether the entries should be fixed (the close has run).
func (d *drawState) fixed() bool { return d.state != "open" }

// readDraw reads the draw of a sale; false when the sale is not a draw (or the database
// predates migration 009, when no sale can be one).
func readDraw(ctx context.Context, pg *pgxpool.Pool, rdb redis.UniversalClient, sale string, checkRedis bool) (*drawState, bool, error) {
	d := &drawState{nodes: map[[2]int][]byte{}, waves: map[string][]drawWave{}, stock: map[string]int{}, checkRedis: checkRedis}
	var commitment, seed, root *string
	var entries *int
	var beaconSig, beaconRnd *string
	err := pg.QueryRow(ctx, `SELECT state, seed_commitment, seed, entries_root, entries, beacon, beacon_signature, beacon_randomness, closes_at FROM draws WHERE sale_id = $1`, sale).
		Scan(&d.state, &commitment, &seed, &root, &entries, &d.beacon, &beaconSig, &beaconRnd, &d.closes)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("verify: read the draw of %s: %w", sale, err)
	}
	d.raises = map[string][]drawRaise{}
	err = pg.QueryRow(ctx, `SELECT waitlist FROM draws WHERE sale_id = $1`, sale).Scan(&d.waitlist)
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42703") {
		return nil, false, fmt.Errorf("verify: read the draw of %s: %w", sale, err)
	}
	if d.waitlist {
		rows, err := pg.Query(ctx, `SELECT order_id, variant, wave, pos, claim_until, at FROM draw_raises WHERE sale_id = $1 ORDER BY variant, wave, pos`, sale)
		if err != nil {
			return nil, false, fmt.Errorf("verify: read the draw's raises: %w", err)
		}
		for rows.Next() {
			var x drawRaise
			if err := rows.Scan(&x.order, &x.variant, &x.wave, &x.pos, &x.until, &x.at); err != nil {
				rows.Close()
				return nil, false, err
			}
			d.raises[x.variant] = append(d.raises[x.variant], x)
		}
		if err := rows.Err(); err != nil {
			return nil, false, fmt.Errorf("verify: read the draw's raises: %w", err)
		}
	}
	d.commitment, d.seedHex, d.root, d.entryCount = deref(commitment), deref(seed), deref(root), -1
	if d.beacon != nil {
		d.beacon.Signature, d.beacon.Randomness = deref(beaconSig), deref(beaconRnd)
	}
	if entries != nil {
		d.entryCount = *entries
	}
	rows, err := pg.Query(ctx, `SELECT entry_id, user_id, variant, idx, leaf, coalesce(pos, -1) FROM draw_entries WHERE sale_id = $1 ORDER BY entry_id`, sale)
	if err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's entries: %w", err)
	}
	for rows.Next() {
		var e drawEntry
		if err := rows.Scan(&e.id, &e.user, &e.variant, &e.idx, &e.leaf, &e.pos); err != nil {
			rows.Close()
			return nil, false, err
		}
		d.entries = append(d.entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's entries: %w", err)
	}
	rows, err = pg.Query(ctx, `SELECT level, idx, hash FROM draw_nodes WHERE sale_id = $1`, sale)
	if err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's tree: %w", err)
	}
	for rows.Next() {
		var level, idx int
		var h []byte
		if err := rows.Scan(&level, &idx, &h); err != nil {
			rows.Close()
			return nil, false, err
		}
		d.nodes[[2]int{level, idx}] = h
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's tree: %w", err)
	}
	rows, err = pg.Query(ctx, `SELECT variant, wave, lo, hi, at, claim_until FROM draw_waves WHERE sale_id = $1 ORDER BY variant, wave`, sale)
	if err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's waves: %w", err)
	}
	for rows.Next() {
		var w drawWave
		if err := rows.Scan(&w.variant, &w.wave, &w.lo, &w.hi, &w.at, &w.until); err != nil {
			rows.Close()
			return nil, false, err
		}
		d.waves[w.variant] = append(d.waves[w.variant], w)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's waves: %w", err)
	}
	rows, err = pg.Query(ctx, `SELECT order_id, user_id, variant_id, status, quantity, accepted_at, updated_at FROM orders WHERE sale_id = $1 ORDER BY order_id`, sale)
	if err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's orders: %w", err)
	}
	for rows.Next() {
		var o drawOrder
		if err := rows.Scan(&o.id, &o.user, &o.variant, &o.status, &o.qty, &o.accepted, &o.updated); err != nil {
			rows.Close()
			return nil, false, err
		}
		d.orders = append(d.orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's orders: %w", err)
	}
	// A sale with variants draws per variant; a sale with a stock alone has one variant, the
	// empty one, which holds the whole stock.
	rows, err = pg.Query(ctx, `SELECT variant_id, initial_stock FROM sale_variants WHERE sale_id = $1`, sale)
	if err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's variants: %w", err)
	}
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			rows.Close()
			return nil, false, err
		}
		d.stock[v] = n
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("verify: read the draw's variants: %w", err)
	}
	if len(d.stock) == 0 {
		var n int
		if err := pg.QueryRow(ctx, `SELECT initial_stock FROM sales WHERE id = $1`, sale).Scan(&n); err != nil {
			return nil, false, fmt.Errorf("verify: read the draw's sale: %w", err)
		}
		d.stock[""] = n
	}
	if checkRedis {
		d.redisDraw, d.redisErr = rdb.HGetAll(ctx, contract.DrawKey(sale)).Result()
		if d.redisErr == nil {
			d.redisEntries, d.redisErr = scanHash(ctx, rdb, contract.DrawEntriesKey(sale))
		}
		if d.redisErr == nil {
			d.redisRaises, d.redisErr = rdb.LRange(ctx, contract.DrawRaisesKey(sale), 0, -1).Result()
		}
		if d.redisErr == nil {
			var us []string
			us, d.redisErr = rdb.SMembers(ctx, contract.DrawFlaggedKey(sale)).Result()
			d.redisFlagged = map[string]bool{}
			for _, u := range us {
				d.redisFlagged[u] = true
			}
		}
		// The draw's keys expire with the sale's meta key: long after a sale, Postgres alone
		// remains, and there is nothing in Redis to disagree with.
		d.redisGone = d.redisErr == nil && len(d.redisDraw) == 0 && len(d.redisEntries) == 0
	}
	d.recompute()
	return d, true, nil
}

// scanHash reads a hash in chunks: the entries hash of a big draw holds a million fields, and
// one HGETALL of them would block Redis for the whole sale's gateways.
func scanHash(ctx context.Context, rdb redis.UniversalClient, key string) (map[string]string, error) {
	out := map[string]string{}
	var cursor uint64
	for {
		kv, next, err := rdb.HScan(ctx, key, cursor, "*", 1000).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// recompute ranks the stored entries with the stored seed, when it is revealed and opens the
// commitment: a seed that does not is reported by check 10, and ranking with it would only
// repeat the same failure in every other check.
func (d *drawState) recompute() {
	if !d.drawn() || !draw.Opens(d.seedHex, d.commitment) {
		return
	}
	d.seed, _ = hex.DecodeString(d.seedHex)
	rankSeed, err := draw.RankingSeed(d.seed, d.beacon)
	if err != nil {
		d.beaconErr = err // check 10 says it; nothing can be ranked without the round
		return
	}
	d.ranking = draw.RankVariants(rankSeed, d.publicEntries())
	d.posOf = map[string]int{}
	for _, rs := range d.ranking {
		for i, r := range rs {
			d.posOf[r.ID] = i
		}
	}
}

func (d *drawState) publicEntries() []draw.Entry {
	es := make([]draw.Entry, len(d.entries))
	for i, e := range d.entries {
		es[i] = draw.Entry{ID: e.id, Variant: e.variant}
	}
	return es
}

// redisEntry is a value of the entries hash: "<entry_id>:<variant>" (entered),
// "<entry_id>:<variant>:w" (withdrawn), "<entry_id>:<variant>:<pos>" (drawn) or
// "<entry_id>:<variant>:<pos>:r" (drawn, the winner's unit released by the waitlist).
type redisEntry struct {
	id, variant string
	withdrawn   bool
	released    bool
	pos         int // -1: not drawn
}

func parseRedisEntry(s string) (redisEntry, bool) {
	e := redisEntry{pos: -1}
	id, rest, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return e, false
	}
	e.id, e.variant = id, rest
	// A variant id has no colon (contract.ValidID), so a second colon starts the suffix.
	if v, suffix, ok := strings.Cut(rest, ":"); ok {
		e.variant = v
		if p, ok := strings.CutSuffix(suffix, ":r"); ok {
			e.released, suffix = true, p
		}
		if suffix == "w" && !e.released {
			e.withdrawn = true
		} else {
			p, err := strconv.Atoi(suffix)
			if err != nil || p < 0 {
				return e, false
			}
			e.pos = p
		}
	}
	return e, true
}

// Draw checks invariants 10-15 of a sale in draw mode. It returns no check for a sale that is
// not a draw; an error only when a source could not be read. checkRedis compares Redis with
// Postgres as well (positions, seed, root).
func Draw(ctx context.Context, src Sources, sale string, checkRedis bool) ([]Check, error) {
	d, ok, err := readDraw(ctx, src.PG, src.Redis, sale, checkRedis)
	if err != nil || !ok {
		return nil, err
	}
	cs := []Check{
		d.checkSeed(),
		d.checkRoot(),
		d.checkRanking(),
		d.checkOneWin(),
		d.checkOrders(),
		d.checkOversold(),
	}
	if d.waitlist {
		cs = append(cs, d.checkRaises())
	}
	return cs, nil
}

// drawChecks are Verify's invariants 10-15 when the sale is a draw (none otherwise).
func drawChecks(ctx context.Context, src Sources, run Run) []Check {
	cs, err := Draw(ctx, src, run.Sale, run.CheckRedis)
	if err != nil {
		c := Check{N: 10, Name: "draw", Verdict: Fail}
		fail(&c, "%v", err)
		return []Check{c}
	}
	return cs
}

// redisSkipped reports whether a check must leave Redis out, and says why in the check: not
// asked for (a database baseline), unreadable (a FAIL: a draw whose Redis cannot be read cannot
// be vouched for), or expired long after the sale.
func (d *drawState) redisSkipped(c *Check) bool {
	switch {
	case !d.checkRedis:
		return true
	case d.redisErr != nil:
		fail(c, "Redis unreadable: %v", d.redisErr)
		return true
	case d.redisGone:
		note(c, "the draw's Redis keys have expired (Postgres alone checked)")
		return true
	}
	return false
}

// 10. The revealed seed opens the commitment published at preheat; before the draw the seed is
// in Redis alone (a seed in Postgres before the draw could have leaked through a backup).
func (d *drawState) checkSeed() Check {
	c := Check{N: 10, Name: "the revealed seed opens the commitment", Verdict: Pass}
	if len(d.commitment) != 64 {
		fail(&c, "no commitment was published (%q)", d.commitment)
	}
	switch {
	case d.drawn() && !draw.Opens(d.seedHex, d.commitment):
		fail(&c, "SHA-256 of the revealed seed is not the commitment %s", d.commitment)
		addProblem(&c, fmt.Sprintf("seed %q, SHA-256 %s", d.seedHex, commitmentOf(d.seedHex)))
	case d.drawn():
		note(&c, "state %s: SHA-256 of the revealed seed is the commitment %s", d.state, d.commitment)
	case d.seedHex != "":
		fail(&c, "state %s: the seed is in Postgres before the draw", d.state)
	default:
		note(&c, "state %s: the seed is not revealed yet", d.state)
	}
	if b := d.beacon; b != nil {
		// The rules fix one round: any later one is unknown at the close too, but an operator
		// free to name it after seeing several could pick the ranking he likes.
		if want := b.DrawRound(d.closes); b.Round != want {
			fail(&c, "beacon round %d is not round %d, the first published after closes_at %s", b.Round, want, d.closes.UTC().Format(time.RFC3339))
		}
		if err := b.CheckQuicknet(); err != nil {
			fail(&c, "%v", err)
		}
	}
	switch {
	case d.beaconErr != nil:
		fail(&c, "the ranking's seed cannot be derived from beacon round %d: %v", d.beacon.Round, d.beaconErr)
	case d.beacon != nil && d.drawn():
		note(&c, "ranked with the effective seed of beacon round %d (its signature verifies under chain %s's key)", d.beacon.Round, d.beacon.ChainHash)
	case d.beacon == nil:
		note(&c, "commit-reveal only: no public beacon")
	}
	if d.redisSkipped(&c) {
		return c
	}
	if rc := d.redisDraw["commitment"]; rc != d.commitment {
		fail(&c, "Redis commitment %q != Postgres %q", rc, d.commitment)
	}
	if rs := d.redisDraw["seed"]; d.drawn() && !strings.EqualFold(rs, d.seedHex) {
		fail(&c, "Redis seed differs from the revealed one")
	} else if !draw.Opens(rs, d.commitment) {
		fail(&c, "the seed in Redis does not open the commitment")
	}
	return c
}

func commitmentOf(seedHex string) string {
	b, err := hex.DecodeString(seedHex)
	if err != nil {
		return "(not hex)"
	}
	return draw.Commitment(b)
}

// 11. The entries fixed at the close (in entry-id order, each with its leaf index and leaf)
// open the published root, every stored node of the tree is the node rebuilt from them, and
// every live entry Redis took is among them.
func (d *drawState) checkRoot() Check {
	c := Check{N: 11, Name: "the entries open the root, the stored tree agrees", Verdict: Pass}
	if !d.fixed() {
		note(&c, "state open: the entries are not fixed yet (%d stored)", len(d.entries))
		if len(d.entries) > 0 || len(d.nodes) > 0 || d.root != "" {
			fail(&c, "entries, tree or root stored before the close")
		}
		return c
	}
	leaves := make([]draw.Hash, len(d.entries))
	badLeaf, badIdx := 0, 0
	for i, e := range d.entries {
		leaves[i] = draw.Leaf(draw.Entry{ID: e.id, Variant: e.variant})
		if !bytes.Equal(e.leaf, leaves[i][:]) {
			badLeaf++
			addProblem(&c, fmt.Sprintf("entry %s (user %s): stored leaf %x is not SHA-256(%q)", e.id, e.user, e.leaf, e.id+"\n"+e.variant))
		}
		if e.idx != i {
			badIdx++
			addProblem(&c, fmt.Sprintf("entry %s is leaf %d in entry-id order but stored at index %d", e.id, i, e.idx))
		}
	}
	tree := draw.Build(leaves)
	root := tree.Root()
	rootHex := hex.EncodeToString(root[:])
	if rootHex != d.root {
		fail(&c, "the %d entries' root is %s, published %s", len(d.entries), rootHex, d.root)
	}
	if d.entryCount != len(d.entries) {
		fail(&c, "the draw says %d entries, %d are stored", d.entryCount, len(d.entries))
	}
	// The stored levels above the leaves: each node the rebuilt one, none missing, none more.
	badNode, want := 0, 0
	for level := 1; level < len(tree.Levels); level++ {
		for idx, h := range tree.Levels[level] {
			want++
			got, ok := d.nodes[[2]int{level, idx}]
			if !ok || !bytes.Equal(got, h[:]) {
				badNode++
				addProblem(&c, fmt.Sprintf("tree node (level %d, index %d): stored %x, rebuilt %x", level, idx, got, h))
			}
		}
	}
	extra := 0
	for k := range d.nodes {
		if k[0] < 1 || k[0] >= len(tree.Levels) || k[1] < 0 || k[1] >= len(tree.Levels[k[0]]) {
			extra++
		}
	}
	if extra > 0 {
		badNode += extra
		addProblem(&c, fmt.Sprintf("%d stored tree nodes that the tree of the entries does not have", extra))
	}
	missing := 0
	if !d.redisSkipped(&c) {
		if r := d.redisDraw["root"]; r != d.root {
			fail(&c, "Redis root %q != Postgres %q", r, d.root)
		}
		if n, err := strconv.Atoi(d.redisDraw["entries"]); err != nil || n != len(d.entries) {
			fail(&c, "Redis says %q entries, Postgres holds %d", d.redisDraw["entries"], len(d.entries))
		}
		byUser := map[string]bool{}
		for _, e := range d.entries {
			byUser[e.user] = true
		}
		for _, u := range sortedKeys(d.redisEntries) {
			re, ok := parseRedisEntry(d.redisEntries[u])
			if ok && !re.withdrawn && !byUser[u] && re.pos < 0 && !d.redisFlagged[u] {
				missing++
				addProblem(&c, fmt.Sprintf("user %s's live entry %s is not among the fixed entries", u, re.id))
			}
		}
	}
	c.Numbers = map[string]int{"entries": len(d.entries), "bad_leaves": badLeaf, "bad_indexes": badIdx,
		"tree_nodes": want, "bad_nodes": badNode, "live_entries_not_fixed": missing}
	note(&c, "%d entries: %d wrong leaves, %d wrong leaf indexes; %d of %d tree nodes wrong or missing; root %s",
		len(d.entries), badLeaf, badIdx, badNode, want, rootHex)
	if missing > 0 {
		note(&c, "%d live entries in Redis the close did not fix", missing)
	}
	if badLeaf+badIdx+badNode+missing > 0 {
		c.Verdict = Fail
	}
	return c
}

// heldAt is the units of variant v held at instant t: orders accepted before t that still hold
// their unit, or gave it back (cancelled, failed) only at or after t. The time an ended order
// gave its unit back is its last update, which the sweeper and the consumer write as they end
// it: close enough to the moment Redis took the unit back for a wave that opens seconds later.
func (d *drawState) heldAt(v string, t time.Time) int {
	n := 0
	for _, o := range d.orders {
		if o.variant != v || !o.accepted.Before(t) {
			continue
		}
		if holding(o.status) || !o.updated.Before(t) {
			n += max(o.qty, 1)
		}
	}
	return n
}

// 12. The draw is the seed's: each entry's position (in Postgres and in Redis) is its place in
// its variant's ranking by HMAC-SHA256(seed, entry id), so the winners [lo, hi) of each wave are
// exactly the entries at those places; the waves of a variant start at 0 and follow each other
// without gap or overlap, wave 1 gives the variant's stock and each later wave the units left
// unclaimed when it opened.
func (d *drawState) checkRanking() Check {
	c := Check{N: 12, Name: "winners are the seed's ranking, wave by wave", Verdict: Pass}
	if !d.drawn() {
		note(&c, "state %s: not drawn yet", d.state)
		for _, e := range d.entries {
			if e.pos >= 0 {
				fail(&c, "positions stored before the seed was revealed")
				addProblem(&c, fmt.Sprintf("entry %s has position %d", e.id, e.pos))
				break
			}
		}
		if len(d.waves) > 0 {
			fail(&c, "waves stored before the seed was revealed")
		}
		return c
	}
	if d.ranking == nil {
		fail(&c, "the seed does not open the commitment: no ranking to compare with (see 10)")
		return c
	}
	wrongPos, wrongRedis, badWaves := 0, 0, 0
	for _, e := range d.entries {
		want := d.posOf[e.id]
		if e.pos != want {
			wrongPos++
			addProblem(&c, fmt.Sprintf("entry %s (variant %s): Postgres position %d, the seed ranks it %d", e.id, e.variant, e.pos, want))
		}
	}
	redisCompared := !d.redisSkipped(&c)
	if redisCompared {
		for _, e := range d.entries {
			want := fmt.Sprintf("%s:%s:%d", e.id, e.variant, d.posOf[e.id])
			got := d.redisEntries[e.user]
			if d.waitlist && got == want+":r" && d.released(e.user, e.variant) {
				got = want // his unit went to the next rank (check 16)
			}
			if got != want {
				wrongRedis++
				addProblem(&c, fmt.Sprintf("user %s: Redis entry %q, the seed says %q", e.user, got, want))
			}
		}
	}
	variants := map[string]bool{}
	for v := range d.ranking {
		variants[v] = true
	}
	for v := range d.waves {
		variants[v] = true
	}
	winners := 0
	for _, v := range sortedKeys(variants) {
		ranked, ws := d.ranking[v], d.waves[v]
		n, stock := len(ranked), d.stock[v]
		if _, ok := d.stock[v]; !ok {
			badWaves++
			addProblem(&c, fmt.Sprintf("variant %q has entries or waves but the sale does not have it", v))
		}
		if len(ws) == 0 {
			if n > 0 && stock > 0 {
				badWaves++
				addProblem(&c, fmt.Sprintf("variant %s: %d entries, %d units, but no wave", v, n, stock))
			}
			continue
		}
		for i, w := range ws {
			var from, to int
			if i == 0 {
				from, to = draw.FirstWave(n, stock)
			} else {
				prev := ws[i-1]
				from, to = draw.NextWave(prev.hi, stock-d.heldAt(v, w.at), n)
			}
			// The waitlist's raises of this wave add their places above it (check 16).
			for _, x := range d.raises[v] {
				if x.wave == w.wave {
					to++
				}
			}
			if w.wave != i+1 || w.lo != from || w.hi != to {
				badWaves++
				addProblem(&c, fmt.Sprintf("variant %s wave %d gives [%d, %d), the ranking and the units left say wave %d gives [%d, %d)",
					v, w.wave, w.lo, w.hi, i+1, from, to))
			}
			if !w.at.Before(w.until) || (i > 0 && w.at.Before(ws[i-1].until)) {
				badWaves++
				addProblem(&c, fmt.Sprintf("variant %s wave %d: window [%s, %s) overlaps the wave before or is empty", v, w.wave,
					w.at.Format(time.RFC3339Nano), w.until.Format(time.RFC3339Nano)))
			}
			winners += max(min(w.hi, n)-max(w.lo, 0), 0)
		}
	}
	c.Numbers = map[string]int{"entries": len(d.entries), "variants": len(d.ranking), "winners": winners,
		"wrong_positions": wrongPos, "wrong_redis_entries": wrongRedis, "wrong_waves": badWaves}
	seedName := "seed"
	if d.beacon != nil {
		seedName = "effective seed" // docs/draw.md, "A public beacon"
	}
	note(&c, "%d entries over %d variants ranked by HMAC-SHA256(%s, entry id): %d winners; %d positions differ in Postgres, %d in Redis; %d waves wrong",
		len(d.entries), len(d.ranking), seedName, winners, wrongPos, wrongRedis, badWaves)
	if !redisCompared && d.checkRedis {
		note(&c, "Redis positions not compared")
	}
	if wrongPos+wrongRedis+badWaves > 0 {
		c.Verdict = Fail
	}
	return c
}

// 13. No user wins twice: one entry per user, one position per entry and per place, and no
// entry in Redis that is not a fixed entry of the same user (a copied entry value would make
// its holder a winner of someone else's place).
func (d *drawState) checkOneWin() Check {
	c := Check{N: 13, Name: "no user wins twice", Verdict: Pass}
	entryOf := map[string]string{} // user -> entry id
	twoEntries, sharedPlace := 0, 0
	place := map[string]string{} // "<variant>:<pos>" -> entry id
	for _, e := range d.entries {
		if prev, ok := entryOf[e.user]; ok {
			twoEntries++
			addProblem(&c, fmt.Sprintf("user %s holds entries %s and %s", e.user, prev, e.id))
		}
		entryOf[e.user] = e.id
		if e.pos < 0 {
			continue
		}
		k := e.variant + ":" + strconv.Itoa(e.pos)
		if prev, ok := place[k]; ok {
			sharedPlace++
			addProblem(&c, fmt.Sprintf("entries %s and %s share position %d of variant %s", prev, e.id, e.pos, e.variant))
		}
		place[k] = e.id
	}
	foreign := 0
	if !d.redisSkipped(&c) {
		holders := map[string][]string{} // entry id -> users holding it in Redis
		for _, u := range sortedKeys(d.redisEntries) {
			re, ok := parseRedisEntry(d.redisEntries[u])
			if !ok {
				foreign++
				addProblem(&c, fmt.Sprintf("user %s: unreadable Redis entry %q", u, d.redisEntries[u]))
				continue
			}
			holders[re.id] = append(holders[re.id], u)
			if re.pos >= 0 && entryOf[u] != re.id {
				foreign++
				addProblem(&c, fmt.Sprintf("user %s holds drawn entry %s in Redis, which is not his fixed entry (%q)", u, re.id, entryOf[u]))
			}
		}
		for _, id := range sortedKeys(holders) {
			if len(holders[id]) > 1 {
				twoEntries++
				addProblem(&c, fmt.Sprintf("entry %s is held by users %s in Redis", id, strings.Join(holders[id], ", ")))
			}
		}
	}
	c.Numbers = map[string]int{"entrants": len(entryOf), "users_or_entries_twice": twoEntries, "shared_positions": sharedPlace,
		"foreign_redis_entries": foreign}
	note(&c, "%d entrants: %d entries held twice, %d positions shared, %d Redis entries that are not their user's fixed entry",
		len(entryOf), twoEntries, sharedPlace, foreign)
	if twoEntries+sharedPlace+foreign > 0 {
		c.Verdict = Fail
	}
	return c
}

// 14. Every order of the sale (whatever its status: the gate accepted each of them) belongs to
// a winner of the order's variant, accepted inside the window [at, claim_until) of the wave
// whose places [lo, hi) hold the winner's position in the seed's ranking.
func (d *drawState) checkOrders() Check {
	c := Check{N: 14, Name: "every order belongs to a winner inside his window", Verdict: Pass}
	byUser := map[string]drawEntry{}
	for _, e := range d.entries {
		byUser[e.user] = e
	}
	bad := 0
	for _, o := range d.orders {
		e, ok := byUser[o.user]
		if !ok {
			bad++
			addProblem(&c, fmt.Sprintf("order %s of user %s: the user has no fixed entry", o.id, o.user))
			continue
		}
		if e.variant != o.variant {
			bad++
			addProblem(&c, fmt.Sprintf("order %s of user %s buys variant %q, the entry is for %q", o.id, o.user, o.variant, e.variant))
			continue
		}
		// The position the seed gives, not the stored one: check 12 says whether they agree.
		// Without a seed that opens the commitment (check 10 fails) the stored one is all
		// there is.
		pos, ok := d.posOf[e.id]
		if d.posOf == nil {
			pos, ok = e.pos, e.pos >= 0
		}
		if !ok {
			bad++
			addProblem(&c, fmt.Sprintf("order %s of user %s: the draw has not ranked entry %s", o.id, o.user, e.id))
			continue
		}
		var in *drawWave
		for i, w := range d.waves[e.variant] {
			if w.lo <= pos && pos < w.hi {
				in = &d.waves[e.variant][i]
				break
			}
		}
		switch {
		case in == nil:
			bad++
			addProblem(&c, fmt.Sprintf("order %s of user %s: position %d of variant %s is no wave's winner", o.id, o.user, pos, e.variant))
		case o.accepted.Before(in.at) || !o.accepted.Before(in.until):
			bad++
			addProblem(&c, fmt.Sprintf("order %s of user %s accepted at %s, outside wave %d's window [%s, %s)", o.id, o.user,
				o.accepted.Format(time.RFC3339Nano), in.wave, in.at.Format(time.RFC3339Nano), in.until.Format(time.RFC3339Nano)))
		}
	}
	c.Numbers = map[string]int{"orders": len(d.orders), "not_a_winner_in_window": bad}
	note(&c, "%d orders, %d not by a winner of their variant inside his window", len(d.orders), bad)
	if bad > 0 {
		c.Verdict = Fail
	}
	return c
}

// 15. No variant oversold: the units held by orders (created or paid) of each variant are at
// most the units the variant had.
func (d *drawState) checkOversold() Check {
	c := Check{N: 15, Name: "no variant oversold", Verdict: Pass}
	held := map[string]int{}
	for _, o := range d.orders {
		if holding(o.status) {
			held[o.variant] += max(o.qty, 1)
		}
	}
	over := 0
	for _, v := range sortedKeys(held) {
		stock, ok := d.stock[v]
		if held[v] > stock {
			over++
			if ok {
				addProblem(&c, fmt.Sprintf("variant %q: %d units held of %d", v, held[v], stock))
			} else {
				addProblem(&c, fmt.Sprintf("variant %q: %d units held of a variant the sale does not have", v, held[v]))
			}
		}
	}
	parts := make([]string, 0, len(d.stock))
	for _, v := range sortedKeys(d.stock) {
		parts = append(parts, fmt.Sprintf("%s %d/%d", displayVariant(v), held[v], d.stock[v]))
	}
	sort.Strings(parts)
	c.Numbers = map[string]int{"variants_oversold": over}
	note(&c, "units held/stock per variant: %s", strings.Join(parts, ", "))
	if over > 0 {
		fail(&c, "%d variants OVERSOLD", over)
	}
	return c
}

func displayVariant(v string) string {
	if v == "" {
		return "(no variant)"
	}
	return v
}

// released reports whether user holds an order of variant that gave its unit back (failed or
// cancelled): what the waitlist's ":r" mark on his entry says.
func (d *drawState) released(user, variant string) bool {
	for _, o := range d.orders {
		if o.user == user && o.variant == variant && !holding(o.status) {
			return true
		}
	}
	return false
}

// drawRaiseStale is how long a raise in Redis may wait for Postgres before the check calls it
// lost: the backend records it right after the compensation, or at the draw loop's next tick.
const drawRaiseStale = time.Minute

// 16 (a draw's waitlist). Every raise gives one released unit to one next rank: each raise's
// order is a released order (failed or cancelled) of the sale and of the raise's variant, and
// raised once (one row per order); no position is given twice; each raised position lies in
// its wave's places [lo, hi), at their top (a wave's raises are its last places), below the
// variant's entries; no variant has more raises than released orders; and every raise in
// Redis's log is recorded in Postgres (after drawRaiseStale). Oversold is check 15; a unit lost
// would be an order that is neither holding, nor given back, which check 14 and the stock
// checks see.
func (d *drawState) checkRaises() Check {
	c := Check{N: 16, Name: "every draw waitlist raise gives one released unit to one next rank", Verdict: Pass}
	bad := 0
	problem := func(format string, args ...any) {
		bad++
		addProblem(&c, fmt.Sprintf(format, args...))
	}
	orderOf := map[string]drawOrder{}
	releasedBy := map[string]int{}
	for _, o := range d.orders {
		orderOf[o.id] = o
		if !holding(o.status) {
			releasedBy[o.variant]++
		}
	}
	count := map[string]int{}
	inPG := map[string]bool{}
	total := 0
	for _, v := range sortedKeys(d.raises) {
		n := len(d.ranking[v])
		byWave := map[int][]drawRaise{}
		for _, x := range d.raises[v] {
			total++
			inPG[x.order] = true
			count[v]++
			byWave[x.wave] = append(byWave[x.wave], x)
			o, ok := orderOf[x.order]
			switch {
			case !ok:
				problem("raise of variant %s by order %s: no such order of the sale", v, x.order)
			case o.variant != v:
				problem("raise of variant %s by order %s of variant %q", v, x.order, o.variant)
			case holding(o.status):
				problem("raise of variant %s by order %s, which still holds its unit (%s): a unit offered twice", v, x.order, o.status)
			}
			if d.ranking != nil && x.pos >= n {
				problem("raise of variant %s gives position %d beyond its %d entries", v, x.pos, n)
			}
		}
		for wave, xs := range byWave {
			var w *drawWave
			for i := range d.waves[v] {
				if d.waves[v][i].wave == wave {
					w = &d.waves[v][i]
				}
			}
			if w == nil {
				problem("variant %s: %d raises of wave %d, which is not recorded", v, len(xs), wave)
				continue
			}
			for _, x := range xs {
				if x.pos < w.hi-len(xs) || x.pos >= w.hi {
					problem("variant %s wave %d [%d, %d): raise at position %d is not among its top %d places", v, wave, w.lo, w.hi, x.pos, len(xs))
				}
			}
		}
		if count[v] > releasedBy[v] {
			problem("variant %s: %d raises for %d released orders", v, count[v], releasedBy[v])
		}
	}
	unrecorded := 0
	if !d.redisSkipped(&c) {
		now := time.Now()
		for _, s := range d.redisRaises {
			p := strings.SplitN(s, ":", 6)
			if len(p) != 6 {
				problem("unreadable raise %q in Redis", s)
				continue
			}
			at, _ := strconv.ParseInt(p[3], 10, 64)
			if !inPG[p[5]] && now.Sub(time.UnixMilli(at)) > drawRaiseStale {
				unrecorded++
				problem("raise by order %s in Redis is not recorded in Postgres", p[5])
			}
		}
	}
	c.Numbers = map[string]int{"raises": total, "unrecorded": unrecorded, "problems": bad}
	note(&c, "%d raises over %d variants, %d problems", total, len(count), bad)
	if bad > 0 {
		c.Verdict = Fail
	}
	return c
}
