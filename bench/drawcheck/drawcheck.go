// Package drawcheck is anyone's check of a draw (docs/draw.md, "Checking a draw"): from the
// published data alone (the result, the entries, an entrant's proof) it recomputes what the
// backend drew and says PASS or FAIL. It trusts nothing the server says about the outcome: the
// seed must open the commitment published before the entries opened, the entries must open the
// root published before the seed was revealed, and each wave's winners must be the next
// best-ranked entries of its variant by HMAC-SHA256(seed, entry id). `seckill-bench verify-draw`
// is its command; the arithmetic is contract/draw's, the backend's own.
package drawcheck

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract/draw"
)

// Result is the body of GET /seckill/{sale}/draw/result (DESIGN.md, "Draws"; docs/draw.md,
// "Shapes shared by the parts").
type Result struct {
	State          string `json:"state"`
	SeedCommitment string `json:"seed_commitment"`
	Entries        int    `json:"entries"`
	EntriesRoot    string `json:"entries_root"`
	// ProofVersion is the tree's format (contract/draw.ProofVersion); absent (0) is version 1.
	ProofVersion int    `json:"proof_version"`
	Seed         string `json:"seed"`
	Waves        []Wave `json:"waves"`
	// ClosesAt is when the entries closed (a beacon's round must come after it).
	ClosesAt *time.Time `json:"closes_at"`
	// Randomness is "commit-reveal" (Beacon null) or "commit-reveal+drand" (docs/draw.md, "A
	// public beacon"); EffectiveSeed is the ranking's seed as published, recomputed here.
	Randomness    string       `json:"randomness"`
	Beacon        *draw.Beacon `json:"beacon"`
	EffectiveSeed string       `json:"effective_seed"`
}

// Version is the result's proof version: 1 when it names none (published before proofs named their version).
func (res Result) Version() int { return max(res.ProofVersion, 1) }

// Wave is one published wave of one variant: the positions [From, To) of the variant's ranking
// it made winners, and the winners' entry ids in rank order.
type Wave struct {
	Wave    int    `json:"wave"`
	Variant string `json:"variant"`
	From    int    `json:"from"`
	To      int    `json:"to"`
	// The times are shown, not checked: nothing published lets an outsider check a clock.
	At         json.RawMessage `json:"at,omitempty"`
	ClaimUntil json.RawMessage `json:"claim_until,omitempty"`
	Winners    []string        `json:"winners"`
}

// Proof is the body of GET /seckill/{sale}/draw/proof: an entrant's leaf and its Merkle path.
type Proof struct {
	EntryID string `json:"entry_id"`
	Variant string `json:"variant"`
	// Index is the leaf index (version 2; nil in version 1, where the entries list gives it).
	Index        *int     `json:"index"`
	Leaf         string   `json:"leaf"`
	Path         []string `json:"path"`
	Root         string   `json:"root"`
	ProofVersion int      `json:"proof_version"`
}

// FileFormat names the layout of a saved draw (File), so that a later layout can be told apart.
const FileFormat = "seckill-draw/1"

// File is a draw saved for checking offline (`verify-draw -save`, read back with `-file`): the
// result exactly as the server published it, and every entry in entry-id order as the entries
// endpoint listed them:
//
//	{"format": "seckill-draw/1", "sale": "<sale id>", "source": "<base URL>",
//	 "result": <the body of GET /seckill/{sale}/draw/result, verbatim>,
//	 "entries": [{"entry_id": "...", "variant": "..."}, ...]}
//
// The result is kept byte for byte (not re-encoded), so that what is checked is what was
// published.
type File struct {
	Format  string          `json:"format"`
	Sale    string          `json:"sale"`
	Source  string          `json:"source,omitempty"`
	Result  json.RawMessage `json:"result"`
	Entries []draw.Entry    `json:"entries"`
}

// ParsedResult decodes the file's result.
func (f *File) ParsedResult() (Result, error) {
	var r Result
	if len(f.Result) == 0 {
		return r, errors.New("drawcheck: the file holds no result")
	}
	if err := json.Unmarshal(f.Result, &r); err != nil {
		return r, fmt.Errorf("drawcheck: the result: %w", err)
	}
	return r, nil
}

// ReadFile reads a saved draw.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("drawcheck: %s: %w", path, err)
	}
	if f.Format != FileFormat {
		return nil, fmt.Errorf("drawcheck: %s: format %q, want %q", path, f.Format, FileFormat)
	}
	return &f, nil
}

// WriteFile saves a draw (indented: a shop may want to read it).
func WriteFile(path string, f *File) error {
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Client fetches a draw's published data from a gateway (or the backend's order API).
type Client struct {
	Base string // e.g. http://127.0.0.1:8080
	HTTP *http.Client
	// PageSize is the limit asked of each page of entries (0: 1000).
	PageSize int
}

func (c Client) get(ctx context.Context, path string, header http.Header, v any) error {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	u := strings.TrimRight(c.Base, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 512)]))
	}
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = bytes.TrimSpace(body)
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// Fetch reads the result and every entry of a sale's draw, page by page: each page names the
// `after` of the next one in "next", and the last page names none.
func (c Client) Fetch(ctx context.Context, sale string) (*File, error) {
	f := &File{Format: FileFormat, Sale: sale, Source: c.Base, Entries: []draw.Entry{}}
	esc := url.PathEscape(sale)
	if err := c.get(ctx, "/seckill/"+esc+"/draw/result", nil, &f.Result); err != nil {
		return nil, err
	}
	limit := c.PageSize
	if limit <= 0 {
		limit = 1000
	}
	for after := ""; ; {
		var page struct {
			Entries []draw.Entry `json:"entries"`
			Next    string       `json:"next"`
		}
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		if err := c.get(ctx, "/seckill/"+esc+"/draw/entries?"+q.Encode(), nil, &page); err != nil {
			return nil, fmt.Errorf("%w (the entries are published once the entries have closed)", err)
		}
		f.Entries = append(f.Entries, page.Entries...)
		if page.Next == "" {
			return f, nil
		}
		// A "next" that does not move forward would page for ever.
		if page.Next <= after {
			return nil, fmt.Errorf("drawcheck: the entries page after %q names %q as the next one", after, page.Next)
		}
		after = page.Next
	}
}

// FetchProof reads a user's proof (the gateway verifies who the user is and passes his id to the
// backend in X-User-ID; against the backend directly, the header is the user).
func (c Client) FetchProof(ctx context.Context, sale, user string) (Proof, error) {
	var p Proof
	err := c.get(ctx, "/seckill/"+url.PathEscape(sale)+"/draw/proof", http.Header{"X-User-Id": {user}}, &p)
	return p, err
}

// Verify is the whole check in one call, for a test of the whole system: it fetches the draw of
// sale from base (a gateway), recomputes it, and checks the proof of each user given. An error
// means the data could not be fetched; a draw that does not check out is a report that is not
// OK.
func Verify(ctx context.Context, base, sale string, proofUsers ...string) (*Report, error) {
	c := Client{Base: base}
	f, err := c.Fetch(ctx, sale)
	if err != nil {
		return nil, err
	}
	res, err := f.ParsedResult()
	if err != nil {
		return nil, err
	}
	r := Check(sale, res, f.Entries)
	for _, u := range proofUsers {
		p, err := c.FetchProof(ctx, sale, u)
		if err != nil {
			return nil, fmt.Errorf("drawcheck: the proof of %s: %w", u, err)
		}
		CheckProof(r, u, "", p, res, f.Entries)
	}
	return r, nil
}

// Line is one line of a report: a verdict ("PASS", "FAIL", or "" for a detail) and its text.
type Line struct {
	Verdict string
	Text    string
}

// VariantStat is what the report says of one variant.
type VariantStat struct {
	Variant                 string
	Entries, Winners, Waves int
}

// Report is the answer of a check.
type Report struct {
	Sale     string
	State    string
	Lines    []Line
	Variants []VariantStat
	fails    int
}

func (r *Report) pass(format string, args ...any) {
	r.Lines = append(r.Lines, Line{"PASS", fmt.Sprintf(format, args...)})
}

func (r *Report) fail(format string, args ...any) {
	r.fails++
	r.Lines = append(r.Lines, Line{"FAIL", fmt.Sprintf(format, args...)})
}

func (r *Report) detail(format string, args ...any) {
	r.Lines = append(r.Lines, Line{"", fmt.Sprintf(format, args...)})
}

// maxProblems is how many failures of one kind are listed: the first say enough to debug, a
// million would drown them.
const maxProblems = 20

// OK reports whether nothing failed.
func (r *Report) OK() bool { return r.fails == 0 && len(r.Lines) > 0 }

// String renders the report as PASS/FAIL lines, as `seckill-bench verify-room` does.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "draw of sale %s (state %s)\n", r.Sale, r.State)
	for _, l := range r.Lines {
		v := l.Verdict
		if v == "" {
			v = "    "
		}
		fmt.Fprintf(&b, "%s  %s\n", v, l.Text)
	}
	if r.OK() {
		b.WriteString("PASS\n")
	} else {
		b.WriteString("FAIL\n")
	}
	return b.String()
}

// Check recomputes a draw from its published result and entries.
func Check(sale string, res Result, entries []draw.Entry) *Report {
	r := &Report{Sale: sale, State: res.State}
	if res.State == "open" || res.State == "" {
		r.fail("the entries are not closed yet (state %q): there is nothing to check", res.State)
		return r
	}
	// 1. The seed opens the commitment (once revealed).
	drawn := res.Seed != ""
	switch {
	case !drawn && (res.State == "drawn" || res.State == "done"):
		r.fail("state %s, but no seed is revealed: the winners cannot be checked", res.State)
	case !drawn:
		r.detail("the seed is not revealed yet (state %s): the entries are checked, not the ranking", res.State)
	case draw.Opens(res.Seed, res.SeedCommitment):
		r.pass("the seed opens the commitment %s (SHA-256 of the seed)", res.SeedCommitment)
	default:
		r.fail("the seed %s does not open the commitment %s", res.Seed, res.SeedCommitment)
	}
	// 2. The entries, in strictly increasing entry-id order, open the root.
	sorted := true
	for i := 1; i < len(entries); i++ {
		if entries[i-1].ID >= entries[i].ID {
			sorted = false
			r.fail("entries %d and %d (%q, %q) are not in increasing entry-id order (or an entry is listed twice)", i, i+1, entries[i-1].ID, entries[i].ID)
			break
		}
	}
	if len(entries) != res.Entries {
		r.fail("the result says %d entries, the list holds %d", res.Entries, len(entries))
	}
	root := draw.RootOfVersion(res.Version(), entries)
	if root == strings.ToLower(res.EntriesRoot) {
		r.pass("the %d entries open the root %s", len(entries), res.EntriesRoot)
	} else {
		r.fail("the %d entries' root is %s, the published root is %s", len(entries), root, res.EntriesRoot)
	}
	if !drawn {
		if b := res.Beacon; b != nil {
			r.detail("the ranking will use beacon round %d of chain %s (published %s), not fetched yet", b.Round, short64(b.ChainHash), b.RoundTime(b.Round).Format(time.RFC3339))
		} else {
			r.detail("commit-reveal only: no public beacon is named")
		}
		return r
	}
	// A seed that is not the committed one could have been chosen after the entries were
	// known: ranking with it would prove nothing, so the ranking is not compared at all.
	seed, err := hex.DecodeString(res.Seed)
	if err != nil || !sorted || !draw.Opens(res.Seed, res.SeedCommitment) {
		r.fail("the ranking is not checked: the seed is not the committed one, or the entries are out of order")
		return r
	}
	// 3. The beacon: its round's signature and the ranking's seed derived from it.
	rankSeed, ok := checkBeacon(r, res, seed)
	if !ok {
		r.fail("the ranking is not checked: its seed cannot be derived from the published beacon")
		return r
	}
	// 4. Each wave's winners are the next best-ranked entries of its variant.
	ranked := draw.RankVariants(rankSeed, entries)
	byVariant := map[string][]Wave{}
	for _, w := range res.Waves {
		byVariant[w.Variant] = append(byVariant[w.Variant], w)
	}
	variants := map[string]bool{}
	for v := range ranked {
		variants[v] = true
	}
	for v := range byVariant {
		variants[v] = true
	}
	names := make([]string, 0, len(variants))
	for v := range variants {
		names = append(names, v)
	}
	sort.Strings(names)
	before := r.fails
	listed := 0
	bad := func(format string, args ...any) {
		if listed < maxProblems {
			r.fail(format, args...)
		} else {
			r.fails++
		}
		listed++
	}
	for _, v := range names {
		rs, ws := ranked[v], byVariant[v]
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].Wave < ws[j].Wave })
		st := VariantStat{Variant: v, Entries: len(rs), Waves: len(ws)}
		next := 0 // where the next wave must start: waves follow each other from position 0
		for i, w := range ws {
			if w.Wave != i+1 {
				bad("variant %s: wave %d is listed where wave %d belongs", v, w.Wave, i+1)
			}
			if w.From != next {
				bad("variant %s wave %d starts at position %d, the wave before ended at %d", v, w.Wave, w.From, next)
			}
			if w.From < 0 || w.To < w.From || w.To > len(rs) {
				bad("variant %s wave %d: positions [%d, %d) outside the %d entries of the variant", v, w.Wave, w.From, w.To, len(rs))
				next = max(next, w.To)
				continue
			}
			next = w.To
			want := make([]string, 0, w.To-w.From)
			for _, e := range rs[w.From:w.To] {
				want = append(want, e.ID)
			}
			st.Winners += len(w.Winners)
			if !equal(w.Winners, want) {
				bad("variant %s wave %d: winners %s, the seed ranks %s at positions [%d, %d)",
					v, w.Wave, short(w.Winners), short(want), w.From, w.To)
			}
		}
		r.Variants = append(r.Variants, st)
	}
	if r.fails == before {
		r.pass("%d waves: each wave's winners are the next best-ranked entries of its variant by HMAC-SHA256(%s, entry id)", len(res.Waves), seedName(res))
	} else if listed > maxProblems {
		r.detail("(%d more wave problems not listed)", listed-maxProblems)
	}
	for _, st := range r.Variants {
		r.detail("variant %s: %d entries, %d winners over %d %s", display(st.Variant), st.Entries, st.Winners, st.Waves, plural(st.Waves, "wave"))
	}
	return r
}

// CheckProof checks an entrant's proof against the published root (and, when the entries and
// seed are at hand, says where the entry ranks and whether a wave reached it). entryID is the
// id the user received when entering: a proof of another entrant's entry leads to the root as
// well, so only this comparison tells that the server answered with the user's own.
// Empty: not compared, and the report says so.
func CheckProof(r *Report, user, entryID string, p Proof, res Result, entries []draw.Entry) {
	version := res.Version()
	e := draw.Entry{ID: p.EntryID, Variant: p.Variant}
	leaf := draw.LeafOf(version, e)
	leafHex := hex.EncodeToString(leaf[:])
	who := fmt.Sprintf("user %s's entry %s (variant %s)", user, p.EntryID, display(p.Variant))
	switch {
	case entryID == "":
		r.detail("%s: not compared with the entry id received at entry (give it with -entry-id): a server could answer with another entrant's proof", who)
	case entryID != p.EntryID:
		r.fail("%s: the proof is of entry %s, but the user entered as %s", who, p.EntryID, entryID)
	default:
		r.pass("%s: the proof is of the entry id the user received at entry", who)
	}
	// The leaf index: the proof's (version 2), or the entry's place in the published list.
	i := sort.Search(len(entries), func(i int) bool { return entries[i].ID >= p.EntryID })
	index := -1
	if i < len(entries) && entries[i] == e {
		index = i
	}
	if p.Index != nil {
		if index >= 0 && *p.Index != index {
			r.fail("%s: the proof says leaf index %d, the published entries put it at %d", who, *p.Index, index)
		}
		index = *p.Index
	}
	switch {
	case p.ProofVersion != 0 && p.ProofVersion != version:
		r.fail("%s: the proof is of version %d, the result of version %d", who, p.ProofVersion, version)
	case !strings.EqualFold(p.Leaf, leafHex):
		r.fail("%s: the proof's leaf %s is not SHA-256(%sentry id \\n variant) = %s", who, p.Leaf, map[bool]string{true: "0x00 ", false: ""}[version >= 2], leafHex)
	case !strings.EqualFold(p.Root, res.EntriesRoot):
		r.fail("%s: the proof leads to root %s, the published root is %s", who, p.Root, res.EntriesRoot)
	case index < 0:
		r.fail("%s: no leaf index (the proof names none and the entry is not in the list)", who)
	default:
		if err := draw.VerifyInclusion(version, e, index, res.Entries, p.Path, res.EntriesRoot); err != nil {
			r.fail("%s: %v", who, err)
		} else {
			r.pass("%s: its Merkle path of %d hashes, of leaf %d of %d, leads to the published root (proof version %d)", who, len(p.Path), index, res.Entries, version)
		}
	}
	if len(entries) > 0 && (i == len(entries) || entries[i] != (draw.Entry{ID: p.EntryID, Variant: p.Variant})) {
		r.fail("%s is not in the published entries list", who)
		return
	}
	seed, err := hex.DecodeString(res.Seed)
	if err != nil || res.Seed == "" || len(entries) == 0 {
		return
	}
	rankSeed, err := draw.RankingSeed(seed, res.Beacon)
	if err != nil {
		return // Check has said why
	}
	rs := draw.RankVariants(rankSeed, entries)[p.Variant]
	for pos, e := range rs {
		if e.ID != p.EntryID {
			continue
		}
		won := "no wave has reached it"
		for _, w := range res.Waves {
			if w.Variant == p.Variant && w.From <= pos && pos < w.To {
				won = fmt.Sprintf("a winner of wave %d", w.Wave)
			}
		}
		r.detail("%s: position %d of %d in its variant's ranking (0 is the best), %s", who, pos, len(rs), won)
	}
}

// IsCommitment reports whether s is a seed commitment: 64 hex digits (SHA-256), either case.
func IsCommitment(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32
}

// CheckCommitment adds to r whether the published commitment is saved, the one a user kept from
// the draw page before the entries closed. Check proves that the revealed seed opens the
// published commitment; only a commitment kept from before proves that the published one was
// not replaced (with a seed re-rolled after the entries or the beacon round were known).
func CheckCommitment(r *Report, saved string, res Result) {
	if strings.EqualFold(saved, res.SeedCommitment) {
		r.pass("the published commitment is the one you saved (%s)", strings.ToLower(saved))
		return
	}
	r.fail("the published commitment %s is not the one you saved, %s: the seed was replaced after you saw its commitment", res.SeedCommitment, strings.ToLower(saved))
}

// seedName is what the ranking's key is an HMAC of, for the report.
func seedName(res Result) string {
	if res.Beacon != nil {
		return "effective seed"
	}
	return "seed"
}

// checkBeacon checks the draw's randomness (docs/draw.md, "A public beacon") and returns the
// ranking's seed: the committed seed for a commit-reveal draw, else EffectiveSeed of it and
// the named round, once the round's BLS signature verifies under the chain's public key and
// the round comes after the close. ok is false when the seed cannot be derived.
func checkBeacon(r *Report, res Result, seed []byte) ([]byte, bool) {
	b := res.Beacon
	if b == nil {
		if res.Randomness != "" && res.Randomness != draw.RandomnessCommitReveal {
			r.fail("the result says randomness %q but names no beacon", res.Randomness)
			return nil, false
		}
		r.detail("commit-reveal only: no public beacon was named, so the ranking is the seed's alone; whoever could read the seed before the close could have predicted it")
		return seed, true
	}
	ok := true
	if res.Randomness != draw.RandomnessDrand {
		r.fail("the result names a beacon but says randomness %q, want %q", res.Randomness, draw.RandomnessDrand)
		ok = false
	}
	if err := b.ValidateChain(); err != nil {
		r.fail("the beacon's chain: %v", err)
		return nil, false
	}
	switch {
	case b.ChainHash == draw.Quicknet.ChainHash && !strings.EqualFold(b.PublicKey, draw.Quicknet.PublicKey):
		r.fail("the beacon names quicknet's chain hash with another public key")
		ok = false
	case b.CheckQuicknet() != nil:
		r.fail("the beacon names quicknet's chain hash with another period or genesis (%d s, %d), not quicknet's (%d s, %d)",
			b.Period, b.GenesisTime, draw.Quicknet.Period, draw.Quicknet.GenesisTime)
		ok = false
	case b.ChainHash == draw.Quicknet.ChainHash:
		r.pass("the beacon is drand's quicknet (chain %s), its public key the League of Entropy's", short64(b.ChainHash))
	default:
		r.detail("the beacon's chain %s is not quicknet: compare its public key with the chain's /info at a drand endpoint you trust", short64(b.ChainHash))
	}
	due := b.RoundTime(b.Round)
	switch {
	case b.Round == 0:
		r.fail("the beacon names no round")
		return nil, false
	case res.ClosesAt == nil:
		r.fail("the result does not say when the entries closed: beacon round %d (published %s) cannot be checked against the close", b.Round, due.Format(time.RFC3339))
		ok = false
	case !due.After(*res.ClosesAt):
		r.fail("beacon round %d is published at %s, not after the entries closed at %s: it was known during the entries", b.Round, due.Format(time.RFC3339), res.ClosesAt.UTC().Format(time.RFC3339))
		ok = false
	case b.Round != b.DrawRound(*res.ClosesAt):
		// Any later round is unknown at the close too, but an operator free to name one after
		// seeing several could pick the ranking he likes: the rules fix one.
		r.fail("beacon round %d is not round %d, the first published after the entries closed at %s: the rules fix that one round",
			b.Round, b.DrawRound(*res.ClosesAt), res.ClosesAt.UTC().Format(time.RFC3339))
		ok = false
	default:
		r.pass("beacon round %d is published at %s, after the entries closed at %s, and is the first one after it", b.Round, due.Format(time.RFC3339), res.ClosesAt.UTC().Format(time.RFC3339))
	}
	if b.Signature == "" {
		r.fail("the draw is revealed but its beacon round %d is not published", b.Round)
		return nil, false
	}
	rnd, err := b.VerifyRound(b.Round, b.Signature)
	if err != nil {
		r.fail("beacon round %d: %v", b.Round, err)
		return nil, false
	}
	r.pass("beacon round %d: its BLS signature verifies under the chain's public key; randomness SHA-256(signature) = %s", b.Round, hex.EncodeToString(rnd[:]))
	if b.Randomness != "" && !strings.EqualFold(b.Randomness, hex.EncodeToString(rnd[:])) {
		r.fail("the published randomness %s is not SHA-256 of the round's signature", b.Randomness)
		ok = false
	}
	eff, err := draw.EffectiveSeed(seed, b.ChainHash, b.Round, rnd)
	if err != nil {
		r.fail("the effective seed: %v", err)
		return nil, false
	}
	effHex := hex.EncodeToString(eff)
	switch {
	case res.EffectiveSeed != "" && !strings.EqualFold(res.EffectiveSeed, effHex):
		r.fail("the published effective seed %s is not HMAC-SHA256(seed, %q || chain || round || randomness) = %s", res.EffectiveSeed, draw.SeedLabel, effHex)
		ok = false
	default:
		r.pass("the ranking's seed is HMAC-SHA256(seed, %q || chain hash || round || randomness) = %s", draw.SeedLabel, effHex)
	}
	return eff, ok
}

// short64 abbreviates a 64-digit hash.
func short64(h string) string {
	if len(h) < 16 {
		return h
	}
	return h[:8] + "..." + h[len(h)-8:]
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// short lists ids, at most 6 of them: a wave of 10 000 winners would fill the screen.
func short(ids []string) string {
	if len(ids) <= 6 {
		return "[" + strings.Join(ids, " ") + "]"
	}
	return fmt.Sprintf("[%s ... %s] (%d)", strings.Join(ids[:3], " "), strings.Join(ids[len(ids)-2:], " "), len(ids))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func display(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
