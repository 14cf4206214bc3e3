//go:build integration

package drawapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend/drawapi"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/testenv"
)

// seeded is a draw written straight into Postgres with contract/draw, the way the backend's
// draw writes it (docs/draw.md "Postgres"): what the API serves must agree with it.
type seeded struct {
	sale    string
	seed    []byte
	entries []draw.Entry // in entry-id order (leaf order)
	users   map[string]string
	tree    *draw.Tree
	ranked  map[string][]draw.Ranked
	stock   map[string]int
}

// seedDraw writes a sale with a draw of n entries over variants, in the given state: "open"
// (no entries yet), "closed" (entries and tree, no seed), "drawn" or "done" (positions, seed and
// wave 1 of each variant, a second wave for the first variant).
func seedDraw(t *testing.T, pool *pgxpool.Pool, n int, variants []string, state string) *seeded {
	t.Helper()
	ctx := context.Background()
	s := &seeded{sale: testenv.ID("d"), users: map[string]string{}, stock: map[string]int{}}
	s.seed = make([]byte, 32)
	_, _ = rand.Read(s.seed)
	now := time.Now().UTC().Truncate(time.Millisecond)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ($1, 10, 10, $2, $3)`,
		s.sale, now.Add(time.Hour), now.Add(2*time.Hour))
	exec(`INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, seed_commitment) VALUES ($1, $2, $3, 60000, $4)`,
		s.sale, now.Add(-time.Hour), now.Add(time.Hour), draw.Commitment(s.seed))
	if state == "open" {
		return s
	}
	for i := range n {
		// Entry ids as the edge writes them; users whose order differs from the entries'.
		e := draw.Entry{ID: fmt.Sprintf(draw.EntryIDFormat, i+1), Variant: variants[i%len(variants)]}
		s.entries = append(s.entries, e)
		s.users[e.ID] = fmt.Sprintf("u%03d", (i*7)%n)
	}
	draw.SortEntries(s.entries)
	leaves := make([]draw.Hash, n)
	for i, e := range s.entries {
		leaves[i] = draw.Leaf(e)
		exec(`INSERT INTO draw_entries (sale_id, entry_id, user_id, variant, idx, leaf) VALUES ($1, $2, $3, $4, $5, $6)`,
			s.sale, e.ID, s.users[e.ID], e.Variant, i, leaves[i][:])
	}
	s.tree = draw.Build(leaves)
	for l, lv := range s.tree.Levels[1:] {
		for i, h := range lv {
			exec(`INSERT INTO draw_nodes (sale_id, level, idx, hash) VALUES ($1, $2, $3, $4)`, s.sale, l+1, i, h[:])
		}
	}
	root := s.tree.Root()
	exec(`UPDATE draws SET state = 'closed', entries = $2, entries_root = $3, closed_at = now(), proof_version = $4 WHERE sale_id = $1`,
		s.sale, n, hex.EncodeToString(root[:]), draw.ProofVersion)
	if state == "closed" {
		return s
	}
	s.ranked = draw.RankVariants(s.seed, s.entries)
	for v, rs := range s.ranked {
		for pos, r := range rs {
			exec(`UPDATE draw_entries SET pos = $3 WHERE sale_id = $1 AND entry_id = $2`, s.sale, r.ID, pos)
		}
		s.stock[v] = 3
		from, to := draw.FirstWave(len(rs), s.stock[v])
		exec(`INSERT INTO draw_waves (sale_id, variant, wave, lo, hi, at, claim_until) VALUES ($1, $2, 1, $3, $4, $5, $6)`,
			s.sale, v, from, to, now, now.Add(time.Minute))
		if v == variants[0] {
			from, to = draw.NextWave(to, 2, len(rs))
			exec(`INSERT INTO draw_waves (sale_id, variant, wave, lo, hi, at, claim_until) VALUES ($1, $2, 2, $3, $4, $5, $6)`,
				s.sale, v, from, to, now.Add(time.Minute), now.Add(2*time.Minute))
		}
	}
	exec(`UPDATE draws SET state = $2, seed = $3, drawn_at = now() WHERE sale_id = $1`, s.sale, state, hex.EncodeToString(s.seed))
	return s
}

func (s *seeded) rootHex() string {
	r := s.tree.Root()
	return hex.EncodeToString(r[:])
}

// server serves the API with a user check as the order listener's: exactly one valid X-User-ID.
func server(t *testing.T, pool *pgxpool.Pool) *httptest.Server {
	a := &drawapi.API{Pool: pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		User: func(w http.ResponseWriter, r *http.Request) (string, bool) {
			if u := r.Header.Values("X-User-ID"); len(u) == 1 && contract.ValidID(u[0]) {
				return u[0], true
			}
			httpapi.Refuse(w, http.StatusUnauthorized, contract.CodeUnauthenticated, "a valid X-User-ID is required")
			return "", false
		}}
	mux := http.NewServeMux()
	a.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches path as user ("" : no X-User-ID), decodes the JSON body into out (when not nil)
// and returns the status and the Cache-Control header.
func get(t *testing.T, srv *httptest.Server, path, user string, out any) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q, body %s", path, ct, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return resp.StatusCode, resp.Header.Get("Cache-Control")
}

func refusal(t *testing.T, srv *httptest.Server, path, user string, status int, code string) {
	t.Helper()
	var r contract.Refusal
	if got, _ := get(t, srv, path, user, &r); got != status || r.Code != code {
		t.Fatalf("GET %s as %q: %d %q, want %d %q", path, user, got, r.Code, status, code)
	}
}

func TestEveryEntrantsProofVerifiesAgainstThePublishedRootAndGivesHisRank(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	srv := server(t, pool)
	// 37 leaves: odd levels (a node carried up) at several heights; 1 and 2: the smallest trees.
	for _, n := range []int{37, 1, 2, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := seedDraw(t, pool, n, []string{"40", "41", "42"}, "drawn")
			pos := map[string]int{}
			for _, rs := range s.ranked {
				for i, r := range rs {
					pos[r.ID] = i
				}
			}
			var res drawapi.Result
			get(t, srv, "/seckill/"+s.sale+"/draw/result", "", &res)
			if res.EntriesRoot != s.rootHex() {
				t.Fatalf("result root %s, want %s", res.EntriesRoot, s.rootHex())
			}
			proofs := map[string]drawapi.Proof{}
			for i, e := range s.entries {
				var p drawapi.Proof
				if st, cc := get(t, srv, "/seckill/"+s.sale+"/draw/proof", s.users[e.ID], &p); st != 200 || cc != "private, max-age=5" {
					t.Fatalf("proof of %s: %d, Cache-Control %q", e.ID, st, cc)
				}
				leaf := draw.Leaf(e)
				if p.EntryID != e.ID || p.Variant != e.Variant || p.Leaf != hex.EncodeToString(leaf[:]) || p.Root != res.EntriesRoot {
					t.Fatalf("proof of %s: %+v", e.ID, p)
				}
				if err := draw.VerifyProof(p.Leaf, p.Path, p.Root); err != nil {
					t.Fatalf("proof of %s (leaf %d of %d) does not verify: %v (%v)", e.ID, i, n, err, p.Path)
				}
				if want := s.tree.Proof(i); !slices.Equal(p.Path, want) {
					t.Fatalf("path of %s: %v, want %v", e.ID, p.Path, want)
				}
				if p.Rank == nil || *p.Rank != pos[e.ID]+1 {
					t.Fatalf("rank of %s: %v, want %d", e.ID, p.Rank, pos[e.ID]+1)
				}
				proofs[e.ID] = p
			}
			// A path proves its own leaf only: another entry's leaf on it misses the root.
			if n > 1 {
				a, b := proofs[s.entries[0].ID], proofs[s.entries[n-1].ID]
				if draw.VerifyProof(b.Leaf, a.Path, a.Root) == nil {
					t.Fatal("a path verified a leaf that is not its own")
				}
			}
		})
	}
}

func TestEntriesPagesReturnEveryEntryOnceInEntryIDOrder(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	srv := server(t, pool)
	s := seedDraw(t, pool, 37, []string{"40", "41", "42"}, "closed")
	for _, limit := range []int{1, 5, 36, 37, 1000} {
		var all []draw.Entry
		after, pages := "", 0
		for {
			var p drawapi.Page
			// The natural client loop: after= empty on the first page, then each page's next.
			path := fmt.Sprintf("/seckill/%s/draw/entries?limit=%d&after=%s", s.sale, limit, after)
			st, cc := get(t, srv, path, "", &p)
			if st != 200 || cc != "public, max-age=31536000, immutable" {
				t.Fatalf("%s: %d, Cache-Control %q", path, st, cc)
			}
			if len(p.Entries) > limit {
				t.Fatalf("%s: %d entries", path, len(p.Entries))
			}
			all = append(all, p.Entries...)
			pages++
			if p.Next == "" {
				break
			}
			if p.Next != p.Entries[len(p.Entries)-1].ID {
				t.Fatalf("%s: next %s is not the page's last entry", path, p.Next)
			}
			after = p.Next
		}
		if !slices.Equal(all, s.entries) {
			t.Fatalf("limit %d: pages gave %v, want %v", limit, all, s.entries)
		}
		if want := (37 + limit - 1) / limit; pages != want {
			t.Fatalf("limit %d: %d pages, want %d (no empty last page when the count divides)", limit, pages, want)
		}
		if got := draw.RootOf(all); got != s.rootHex() {
			t.Fatalf("the entries served rebuild root %s, published %s", got, s.rootHex())
		}
	}
	// Without a limit: the default, all 37 in one page.
	var p drawapi.Page
	get(t, srv, "/seckill/"+s.sale+"/draw/entries", "", &p)
	if len(p.Entries) != 37 || p.Next != "" {
		t.Fatalf("default page: %d entries, next %q", len(p.Entries), p.Next)
	}
	// After the last entry: an empty page (a JSON list, not null).
	var raw map[string]json.RawMessage
	get(t, srv, "/seckill/"+s.sale+"/draw/entries?after=ffffffff", "", &raw)
	if string(raw["entries"]) != "[]" || raw["next"] != nil {
		t.Fatalf("past the end: %v", raw)
	}
}

func TestResultShowsOnlyWhatEachStateHasPublished(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	srv := server(t, pool)
	variants := []string{"40", "41", "42"}

	open := seedDraw(t, pool, 0, variants, "open")
	var raw map[string]any
	st, cc := get(t, srv, "/seckill/"+open.sale+"/draw/result", "", &raw)
	if st != 200 || cc != "public, max-age=5" || raw["state"] != "open" || raw["seed_commitment"] != draw.Commitment(open.seed) ||
		raw["opens_at"] == nil || raw["closes_at"] == nil || raw["randomness"] != "commit-reveal" || !hasNull(raw, "beacon") || len(raw) != 6 {
		t.Fatalf("open: %d %q %v", st, cc, raw)
	}
	refusal(t, srv, "/seckill/"+open.sale+"/draw/entries", "", 409, drawapi.CodeNotClosed)
	refusal(t, srv, "/seckill/"+open.sale+"/draw/proof", "u001", 409, drawapi.CodeNotClosed)

	closed := seedDraw(t, pool, 37, variants, "closed")
	raw = nil
	st, cc = get(t, srv, "/seckill/"+closed.sale+"/draw/result", "", &raw)
	if st != 200 || cc != "public, max-age=5" || raw["state"] != "closed" || raw["entries"] != 37.0 ||
		raw["entries_root"] != closed.rootHex() || raw["seed"] != nil || raw["waves"] != nil ||
		raw["randomness"] != "commit-reveal" || !hasNull(raw, "beacon") || raw["closes_at"] == nil || raw["proof_version"] != 2.0 || len(raw) != 9 {
		t.Fatalf("closed: %d %q %v", st, cc, raw)
	}
	var p drawapi.Proof
	get(t, srv, "/seckill/"+closed.sale+"/draw/proof", closed.users[closed.entries[3].ID], &p)
	if p.Rank != nil || draw.VerifyProof(p.Leaf, p.Path, p.Root) != nil {
		t.Fatalf("closed: proof %+v (a rank before the draw, or no valid path)", p)
	}
	// The proof names its version and its leaf index, so a verifier checks
	// the path's shape and recomputes the leaf from the entry it was given at entry.
	if p.ProofVersion != draw.ProofVersion || p.Index != 3 || p.EntryID != closed.entries[3].ID ||
		draw.VerifyInclusion(p.ProofVersion, closed.entries[3], p.Index, 37, p.Path, closed.rootHex()) != nil {
		t.Fatalf("closed: proof %+v does not verify as entry 3 of 37 in version %d", p, draw.ProofVersion)
	}

	for _, state := range []string{"drawn", "done"} {
		s := seedDraw(t, pool, 37, variants, state)
		var res drawapi.Result
		st, cc := get(t, srv, "/seckill/"+s.sale+"/draw/result", "", &res)
		wantCC := map[string]string{"drawn": "public, max-age=5", "done": "public, max-age=31536000, immutable"}[state]
		if st != 200 || cc != wantCC || res.State != state || !draw.Opens(res.Seed, res.SeedCommitment) {
			t.Fatalf("%s: %d %q %+v", state, st, cc, res)
		}
		// Wave 1 of each variant, then wave 2 of the first; winners are the ranking's positions.
		if len(res.Waves) != 4 {
			t.Fatalf("%s: %d waves, want 4: %+v", state, len(res.Waves), res.Waves)
		}
		seed, _ := hex.DecodeString(res.Seed)
		ranked := draw.RankVariants(seed, s.entries) // re-run from what was published
		for _, w := range res.Waves {
			var want []string
			for _, r := range ranked[w.Variant][w.From:w.To] {
				want = append(want, r.ID)
			}
			if !slices.Equal(w.Winners, want) || w.ClaimUntil.Before(w.At) {
				t.Fatalf("%s: wave %d of %s: %+v, want winners %v", state, w.Wave, w.Variant, w, want)
			}
		}
		if w := res.Waves[3]; w.Wave != 2 || w.Variant != "40" || w.From != 3 || w.To != 5 {
			t.Fatalf("%s: the second wave: %+v", state, w)
		}
		var pr drawapi.Proof
		if _, cc := get(t, srv, "/seckill/"+s.sale+"/draw/proof", s.users[s.entries[0].ID], &pr); state == "done" && cc != "private, max-age=31536000, immutable" {
			t.Fatalf("done: proof Cache-Control %q", cc)
		}
	}
}

func TestDrawReadsRefuseWithStableCodes(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	srv := server(t, pool)
	s := seedDraw(t, pool, 5, []string{"40"}, "drawn")
	refusal(t, srv, "/seckill/nosuchsale/draw/result", "", 404, contract.CodeUnknownSale)
	refusal(t, srv, "/seckill/nosuchsale/draw/entries", "", 404, contract.CodeUnknownSale)
	refusal(t, srv, "/seckill/nosuchsale/draw/proof", "u001", 404, contract.CodeUnknownSale)
	refusal(t, srv, "/seckill/"+strings.Repeat("x", 65)+"/draw/result", "", 404, contract.CodeUnknownSale)
	refusal(t, srv, "/seckill/"+s.sale+"/draw/proof", "", 401, contract.CodeUnauthenticated)
	refusal(t, srv, "/seckill/"+s.sale+"/draw/proof", "someone-else", 404, drawapi.CodeNotEntered)
	for _, q := range []string{"limit=0", "limit=10001", "limit=-1", "limit=x", "limit=1&limit=2", "after=ABC",
		"after=00000000000000001", "after=%zz", "lmit=5", "after=0%00", "limit=+5", "limit=00005", "limit=05", "limit=%205"} {
		refusal(t, srv, "/seckill/"+s.sale+"/draw/entries?"+q, "", 400, contract.CodeBadRequest)
	}
}

// FuzzParseEntriesQuery: whatever the query string, the parser answers without panicking, and
// what it accepts is within bounds and reads back the same.
func FuzzParseEntriesQuery(f *testing.F) {
	for _, s := range []string{"", "after=0000000a&limit=10", "limit=10000", "limit=10001", "limit=0",
		"after=ffffffffffffffff", "after=A", "limit=1&limit=1", "limit=+5", "limit=05", "limit=00005",
		"after=%30", "x=1", "&&", ";", "limit=1e3", "after=00000001;limit=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := drawapi.ParseEntriesQuery(raw)
		if err != nil {
			return
		}
		if q.Limit < 1 || q.Limit > drawapi.MaxLimit {
			t.Fatalf("%q: limit %d accepted", raw, q.Limit)
		}
		if q.After != "" && (len(q.After) > 16 || strings.Trim(q.After, "0123456789abcdef") != "") {
			t.Fatalf("%q: after %q accepted", raw, q.After)
		}
		again, err := drawapi.ParseEntriesQuery(fmt.Sprintf("after=%s&limit=%d", q.After, q.Limit))
		if q.After == "" {
			again, err = drawapi.ParseEntriesQuery(fmt.Sprintf("limit=%d", q.Limit))
		}
		if err != nil || again != q {
			t.Fatalf("%q: %+v does not read back (%+v, %v)", raw, q, again, err)
		}
	})
}

// hasNull reports whether the answer has key, null (a draw without a beacon says so).
func hasNull(raw map[string]any, key string) bool {
	v, ok := raw[key]
	return ok && v == nil
}
