// Package drawapi serves what anyone reads of a draw (DESIGN.md "Draws", docs/draw.md "Reading
// a draw"): the result (commitment, root, seed, waves and their winners), the entries as fixed
// at the close, page by page, and an entrant's inclusion proof. It only reads the tables the draw
// writes (backend/internal/schema, 009_draws.sql) and never touches Redis: what it serves is
// what was published, so a reader checks it with contract/draw and nothing else.
//
// The backend mounts it on the order listener, which the gateway proxies; the caller's id for
// the proof comes from the same X-User-ID check as GET /orders/{id} (API.User).
package drawapi

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
)

// Codes this package adds to the contract's (documented in docs/draw.md "Reading a draw").
const (
	// CodeNotClosed: the entries and the proofs exist only once the entries are fixed.
	CodeNotClosed = "not_closed"
	// CodeNotEntered: the caller has no entry among those fixed at the close.
	CodeNotEntered = "not_entered"
)

// Entries pages: DefaultLimit when the request names none, MaxLimit at most.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// Cache-Control values. A draw that is done changes no more: its result, pages and proofs are
// immutable. Before that the result moves (the close, the draw, each wave), so caches keep it a
// few seconds only; the entries are fixed at the close and never change after it. A proof is
// the caller's own (private), and gains its rank at the draw.
const (
	cacheShort          = "public, max-age=5"
	cacheImmutable      = "public, max-age=31536000, immutable"
	cachePrivateShort   = "private, max-age=5"
	cachePrivateForever = "private, max-age=31536000, immutable"
)

// API answers the three public reads of a draw.
type API struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
	// User reads the caller's id (X-User-ID, exactly as GET /orders/{id} does); when it answers
	// false it has written the refusal.
	User func(w http.ResponseWriter, r *http.Request) (string, bool)
}

// Mount adds the three routes to mux.
func (a *API) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /seckill/{sale}/draw/result", a.HandleResult)
	mux.HandleFunc("GET /seckill/{sale}/draw/entries", a.HandleEntries)
	mux.HandleFunc("GET /seckill/{sale}/draw/proof", a.HandleProof)
}

// The queries, each by index (plan_test.go holds them to it on a large draw): a wave's
// winners by (sale_id, variant, pos), a page by the primary key (sale_id, entry_id), the
// caller's entry by (sale_id, user_id), and a proof's siblings by (sale_id, idx) for the leaf
// level and draw_nodes' primary key (sale_id, level, idx) above it.
const (
	qWaves = `SELECT w.wave, w.variant, w.at, w.claim_until, w.lo, w.hi,
			ARRAY(SELECT e.entry_id FROM draw_entries e
				WHERE e.sale_id = w.sale_id AND e.variant = w.variant AND e.pos >= w.lo AND e.pos < w.hi
				ORDER BY e.pos)
		FROM draw_waves w WHERE w.sale_id = $1 ORDER BY w.wave, w.variant`
	qPage = `SELECT entry_id, variant FROM draw_entries
		WHERE sale_id = $1 AND entry_id > $2 ORDER BY entry_id LIMIT $3`
	qEntry = `SELECT entry_id, variant, idx, leaf, pos FROM draw_entries
		WHERE sale_id = $1 AND user_id = $2`
	qSiblings = `SELECT 0::smallint, idx, leaf FROM draw_entries WHERE sale_id = $1 AND idx = $2
		UNION ALL
		SELECT n.level, n.idx, n.hash FROM draw_nodes n
			JOIN unnest($3::smallint[], $4::int[]) AS k(level, idx) ON n.level = k.level AND n.idx = k.idx
		WHERE n.sale_id = $1`
)

// Result is the body of GET /seckill/{sale}/draw/result. Before the close it holds the state,
// the commitment and the window; after the close the count and root of the entries; after the
// draw the seed and the waves as well.
type Result struct {
	State          string     `json:"state"`
	SeedCommitment string     `json:"seed_commitment"`
	OpensAt        *time.Time `json:"opens_at,omitempty"`
	ClosesAt       *time.Time `json:"closes_at,omitempty"`
	Entries        *int       `json:"entries,omitempty"`
	EntriesRoot    string     `json:"entries_root,omitempty"`
	// ProofVersion is the format of the tree behind entries_root and the proofs
	// (contract/draw.ProofVersion: 2 with domain-separated hashes; 1 for draws closed before them), once closed.
	ProofVersion int    `json:"proof_version,omitempty"`
	Seed         string `json:"seed,omitempty"`
	Waves        []Wave `json:"waves,omitempty"`
	// Randomness is "commit-reveal" (the seed alone ranks: Beacon is null) or
	// "commit-reveal+drand" (docs/draw.md, "A public beacon": the ranking's seed is derived from
	// the seed and Beacon's round). Beacon is named at the sale's creation, so it is public
	// with the commitment before any entry; its signature and randomness appear once the draw
	// has fetched the round, and EffectiveSeed (the ranking's seed) once the seed is revealed.
	Randomness    string       `json:"randomness"`
	Beacon        *draw.Beacon `json:"beacon"`
	EffectiveSeed string       `json:"effective_seed,omitempty"`
}

// Wave is one wave of one variant in a Result: positions [From, To) of the variant's ranking
// won, Winners their entry ids in rank order.
type Wave struct {
	Wave       int       `json:"wave"`
	Variant    string    `json:"variant"`
	At         time.Time `json:"at"`
	ClaimUntil time.Time `json:"claim_until"`
	From       int       `json:"from"`
	To         int       `json:"to"`
	Winners    []string  `json:"winners"`
}

// Page is the body of GET /seckill/{sale}/draw/entries.
type Page struct {
	Entries []draw.Entry `json:"entries"`
	// Next is the last entry id of this page when more entries follow: ask again with after=Next.
	Next string `json:"next,omitempty"`
}

// Proof is the body of GET /seckill/{sale}/draw/proof: the caller's leaf and the path from it
// to the root (draw.VerifyProof(Leaf, Path, Root) checks it). Rank (position + 1 in the
// variant's ranking) appears once the draw has run.
type Proof struct {
	EntryID string `json:"entry_id"`
	Variant string `json:"variant"`
	// Index is the entry's leaf index (entry-id order, 0-based): with the result's entries it
	// fixes the path's length and the side of each step (draw.VerifyInclusion).
	Index int      `json:"index"`
	Leaf  string   `json:"leaf"`
	Path  []string `json:"path"`
	Root  string   `json:"root"`
	// ProofVersion is the tree's format (see Result).
	ProofVersion int  `json:"proof_version"`
	Rank         *int `json:"rank,omitempty"`
	// Randomness and Beacon as in the result: what the rank was drawn with.
	Randomness string       `json:"randomness"`
	Beacon     *draw.Beacon `json:"beacon"`
}

// drawRow is the draws row of a sale.
type drawRow struct {
	state, commitment, root, seed string
	opens, closes                 time.Time
	entries                       int
	beacon                        *draw.Beacon
	proofVersion                  int
}

// randomness is the row's "randomness" and beacon (with its round's values once fetched).
func (d drawRow) randomness() string {
	if d.beacon == nil {
		return draw.RandomnessCommitReveal
	}
	return draw.RandomnessDrand
}

var errUnknownSale = errors.New("unknown sale")

func (a *API) readDraw(ctx context.Context, sale string) (drawRow, error) {
	var d drawRow
	if !contract.ValidID(sale) {
		return d, errUnknownSale // no sale has such an id; spare the database the question
	}
	var sig, rnd *string
	err := a.Pool.QueryRow(ctx, `SELECT state, COALESCE(seed_commitment, ''), COALESCE(entries_root, ''),
			COALESCE(seed, ''), opens_at, closes_at, COALESCE(entries, 0), proof_version, beacon, beacon_signature, beacon_randomness
		FROM draws WHERE sale_id = $1`, sale).
		Scan(&d.state, &d.commitment, &d.root, &d.seed, &d.opens, &d.closes, &d.entries, &d.proofVersion, &d.beacon, &sig, &rnd)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, errUnknownSale
	}
	if d.beacon != nil && sig != nil {
		d.beacon.Signature = *sig
		if rnd != nil {
			d.beacon.Randomness = *rnd
		}
	}
	return d, err
}

// draw reads the sale's draw, or answers the refusal (404 unknown_sale, 503) and returns false.
func (a *API) draw(w http.ResponseWriter, r *http.Request) (drawRow, bool) {
	d, err := a.readDraw(r.Context(), r.PathValue("sale"))
	switch {
	case errors.Is(err, errUnknownSale):
		refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no draw for this sale")
		return d, false
	case err != nil:
		a.fail(w, "draw read failed", err)
		return d, false
	}
	return d, true
}

func (a *API) fail(w http.ResponseWriter, what string, err error) {
	a.Log.Warn(what, "err", err)
	w.Header().Set("Cache-Control", "no-store")
	httpapi.Unavailable(w)
}

// refuse answers a refusal that no cache keeps: the same request may succeed a moment later (the
// close, a retry).
func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	httpapi.Refuse(w, status, code, msg)
}

// closed reports whether the entries are fixed (the close has run); refuses 409 not_closed when not.
func closed(w http.ResponseWriter, d drawRow) bool {
	if d.state == "open" {
		refuse(w, http.StatusConflict, CodeNotClosed, "the draw has not closed yet; its entries are not fixed")
		return false
	}
	return true
}

// HandleResult answers GET /seckill/{sale}/draw/result.
func (a *API) HandleResult(w http.ResponseWriter, r *http.Request) {
	d, ok := a.draw(w, r)
	if !ok {
		return
	}
	// The window is shown in every state: a beacon's round must come after closes_at, and a
	// checker of a saved result checks that too.
	res := Result{State: d.state, SeedCommitment: d.commitment, Randomness: d.randomness(), Beacon: d.beacon,
		OpensAt: ptr(d.opens.UTC()), ClosesAt: ptr(d.closes.UTC())}
	if d.state == "open" {
		w.Header().Set("Cache-Control", cacheShort)
		httpapi.WriteJSON(w, http.StatusOK, res)
		return
	}
	res.Entries, res.EntriesRoot, res.ProofVersion = ptr(d.entries), d.root, d.proofVersion
	if d.state == "drawn" || d.state == "done" {
		res.Seed = d.seed
		if seed, err := hex.DecodeString(d.seed); err == nil && d.beacon != nil {
			if eff, err := draw.RankingSeed(seed, d.beacon); err == nil {
				res.EffectiveSeed = hex.EncodeToString(eff)
			}
		}
		waves, err := a.waves(r.Context(), r.PathValue("sale"))
		if err != nil {
			a.fail(w, "draw waves read failed", err)
			return
		}
		res.Waves = waves
	}
	w.Header().Set("Cache-Control", cacheFor(d.state, cacheShort, cacheImmutable))
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// waves reads every wave of the sale with its winners in rank order: one query, each wave's
// winners by the (sale_id, variant, pos) index.
func (a *API) waves(ctx context.Context, sale string) ([]Wave, error) {
	rows, err := a.Pool.Query(ctx, qWaves, sale)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Wave, error) {
		var x Wave
		err := r.Scan(&x.Wave, &x.Variant, &x.At, &x.ClaimUntil, &x.From, &x.To, &x.Winners)
		x.At, x.ClaimUntil = x.At.UTC(), x.ClaimUntil.UTC()
		if x.Winners == nil {
			x.Winners = []string{}
		}
		return x, err
	})
	if out == nil && err == nil {
		out = []Wave{} // drawn: the list is there, even empty (a draw without entries)
	}
	return out, err
}

// EntriesQuery is the query of GET /seckill/{sale}/draw/entries.
type EntriesQuery struct {
	After string // the page starts after this entry id ("" : from the first)
	Limit int
}

// ParseEntriesQuery reads "after" (an entry id: 1 to 16 lowercase hex digits; empty or absent:
// the first page) and "limit" (1 to MaxLimit in canonical form, httpapi.ParseLimit;
// DefaultLimit when absent). Each at most once; other parameters are refused too, so a
// misspelt "limit" is not silently the default.
func ParseEntriesQuery(raw string) (EntriesQuery, error) {
	q := EntriesQuery{Limit: DefaultLimit}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return q, errors.New("the query string is malformed")
	}
	for k, v := range vals {
		if len(v) != 1 {
			return q, errors.New(strconv.Quote(k) + " given more than once")
		}
		switch k {
		case "after":
			if v[0] == "" {
				continue // after= is the first page, as no after at all
			}
			if !validEntryID(v[0]) {
				return q, errors.New("after: want an entry id (1 to 16 lowercase hex digits)")
			}
			q.After = v[0]
		case "limit":
			n, ok := httpapi.ParseLimit(v[0], MaxLimit)
			if !ok {
				return q, errors.New("limit: want an integer from 1 to " + strconv.Itoa(MaxLimit) + ", written plainly (no sign, no leading zero)")
			}
			q.Limit = n
		default:
			return q, errors.New("unknown parameter " + strconv.Quote(k) + " (want after, limit)")
		}
	}
	return q, nil
}

// validEntryID accepts what the edge writes (draw.EntryIDFormat: at least 8 lowercase hex
// digits; more once a sale passes 2^32 entries, which 16 digits cover).
func validEntryID(s string) bool {
	if len(s) < 1 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// HandleEntries answers GET /seckill/{sale}/draw/entries: a page of the entries fixed at the
// close, in entry-id order, by keyset on the primary key (sale_id, entry_id).
func (a *API) HandleEntries(w http.ResponseWriter, r *http.Request) {
	q, err := ParseEntriesQuery(r.URL.RawQuery)
	if err != nil {
		refuse(w, http.StatusBadRequest, contract.CodeBadRequest, err.Error())
		return
	}
	d, ok := a.draw(w, r)
	if !ok || !closed(w, d) {
		return
	}
	// One more than the page: whether it exists says whether a next page does.
	rows, err := a.Pool.Query(r.Context(), qPage, r.PathValue("sale"), q.After, q.Limit+1)
	if err != nil {
		a.fail(w, "draw entries read failed", err)
		return
	}
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (draw.Entry, error) {
		var e draw.Entry
		return e, r.Scan(&e.ID, &e.Variant)
	})
	if err != nil {
		a.fail(w, "draw entries read failed", err)
		return
	}
	p := Page{Entries: es}
	if len(es) > q.Limit {
		p.Entries = es[:q.Limit]
		p.Next = p.Entries[q.Limit-1].ID
	}
	if p.Entries == nil {
		p.Entries = []draw.Entry{}
	}
	// The entries are fixed at the close: a page never changes once served.
	w.Header().Set("Cache-Control", cacheImmutable)
	httpapi.WriteJSON(w, http.StatusOK, p)
}

// HandleProof answers GET /seckill/{sale}/draw/proof for the caller's own entry.
func (a *API) HandleProof(w http.ResponseWriter, r *http.Request) {
	user, ok := a.User(w, r)
	if !ok {
		return
	}
	d, ok := a.draw(w, r)
	if !ok || !closed(w, d) {
		return
	}
	p, found, err := a.proof(r.Context(), r.PathValue("sale"), user, d)
	if err != nil {
		a.fail(w, "draw proof read failed", err)
		return
	}
	if !found {
		refuse(w, http.StatusNotFound, CodeNotEntered, "no entry of this user was fixed at the close")
		return
	}
	w.Header().Set("Vary", "X-User-ID")
	w.Header().Set("Cache-Control", cacheFor(d.state, cachePrivateShort, cachePrivateForever))
	httpapi.WriteJSON(w, http.StatusOK, p)
}

// proof reads the user's entry, then the sibling of each level in one indexed query: the leaf's
// sibling from draw_entries (by idx), the higher ones from draw_nodes (by its primary key).
// draw.Sibling and draw.LevelSizes say which nodes those are, so nothing else of the tree is read.
func (a *API) proof(ctx context.Context, sale, user string, d drawRow) (Proof, bool, error) {
	var p Proof
	var idx int
	var leaf []byte
	var pos *int
	err := a.Pool.QueryRow(ctx, qEntry, sale, user).Scan(&p.EntryID, &p.Variant, &idx, &leaf, &pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	p.Leaf, p.Root, p.Index, p.ProofVersion = hex.EncodeToString(leaf), d.root, idx, d.proofVersion
	p.Randomness, p.Beacon = d.randomness(), d.beacon
	if pos != nil {
		p.Rank = ptr(*pos + 1)
	}
	// The sibling wanted at each level below the root, and the side it sits on.
	sizes := draw.LevelSizes(d.entries)
	type want struct {
		level, idx int
		left       bool
	}
	var wants []want
	leafSib, levels, idxs := -1, []int16{}, []int32{}
	for l, i := 0, idx; l < len(sizes)-1; l, i = l+1, i/2 {
		s, ok := draw.Sibling(i, sizes[l])
		if !ok {
			continue // carried up: nothing at this level
		}
		wants = append(wants, want{l, s, s < i})
		if l == 0 {
			leafSib = s
		} else {
			levels, idxs = append(levels, int16(l)), append(idxs, int32(s))
		}
	}
	rows, err := a.Pool.Query(ctx, qSiblings, sale, leafSib, levels, idxs)
	if err != nil {
		return p, false, err
	}
	type key struct{ level, idx int }
	got := map[key][]byte{}
	var lv int16
	var i int32
	var h []byte
	if _, err := pgx.ForEachRow(rows, []any{&lv, &i, &h}, func() error {
		got[key{int(lv), int(i)}] = h
		return nil
	}); err != nil {
		return p, false, err
	}
	p.Path = make([]string, 0, len(wants))
	for _, x := range wants {
		h, ok := got[key{x.level, x.idx}]
		if !ok {
			return p, false, errors.New("draw tree incomplete: no node " + strconv.Itoa(x.idx) + " at level " + strconv.Itoa(x.level))
		}
		side := "R:"
		if x.left {
			side = "L:"
		}
		p.Path = append(p.Path, side+hex.EncodeToString(h))
	}
	return p, true, nil
}

// cacheFor is the Cache-Control of an answer about a closed draw: final once the draw is done.
func cacheFor(state, moving, final string) string {
	if state == "done" {
		return final
	}
	return moving
}

func ptr[T any](v T) *T { return &v }
