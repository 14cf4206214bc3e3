package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/drawcheck"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/drandtest"
)

// drawServer serves the public draw endpoints of one sale (s1) the way the backend publishes
// them (DESIGN.md "Draws", docs/draw.md "Shapes shared by the parts"), from a draw computed with
// contract/draw: 40 entries over three variants (a 18, b 8, c 14); a has 3 units and a second
// wave of 2, b 2 units, c more units than entries. Its fields are what a test corrupts before starting it.
type drawServer struct {
	result  map[string]any
	entries []draw.Entry
	users   map[string]int // user -> index of his entry
	tree    *draw.Tree
	ranked  map[string][]draw.Ranked
	proofs  map[string]map[string]any
}

func newDrawServer() *drawServer { return newDrawServerWith(nil) }

// newDrawServerWith is the same draw ranked with beacon b's round (nil: commit-reveal only).
func newDrawServerWith(b *draw.Beacon) *drawServer {
	seed := bytes.Repeat([]byte{0x42}, 32)
	rankSeed, err := draw.RankingSeed(seed, b)
	if err != nil {
		panic(err)
	}
	d := &drawServer{users: map[string]int{}, proofs: map[string]map[string]any{}}
	for i := range 40 {
		v := []string{"a", "b", "c", "a"}[i%4]
		if i%10 == 9 {
			v = "c"
		}
		d.entries = append(d.entries, draw.Entry{ID: fmt.Sprintf(draw.EntryIDFormat, i+1), Variant: v})
	}
	leaves := make([]draw.Hash, len(d.entries))
	for i, e := range d.entries {
		leaves[i] = draw.Leaf(e)
		d.users[fmt.Sprintf("u%d", i)] = i
	}
	d.tree = draw.Build(leaves)
	d.ranked = draw.RankVariants(rankSeed, d.entries)
	wave := func(n int, v string, from, to int) map[string]any {
		var winners []string
		for _, r := range d.ranked[v][from:to] {
			winners = append(winners, r.ID)
		}
		return map[string]any{"wave": n, "variant": v, "at": "2026-12-01T10:00:00Z", "claim_until": "2026-12-01T10:10:00Z",
			"from": from, "to": to, "winners": winners}
	}
	_, cTo := draw.FirstWave(len(d.ranked["c"]), 100)
	d.result = map[string]any{"state": "drawn", "entries": len(d.entries), "entries_root": draw.RootOf(d.entries), "proof_version": draw.ProofVersion,
		"seed_commitment": draw.Commitment(seed), "seed": hex.EncodeToString(seed),
		"waves":      []any{wave(1, "a", 0, 3), wave(1, "b", 0, 2), wave(1, "c", 0, cTo), wave(2, "a", 3, 5)},
		"randomness": draw.RandomnessCommitReveal, "beacon": nil}
	if b != nil {
		d.result["randomness"], d.result["beacon"] = draw.RandomnessDrand, b
		d.result["effective_seed"] = hex.EncodeToString(rankSeed)
		// Closed one second before the round was published.
		d.result["closes_at"] = b.RoundTime(b.Round).Add(-time.Second).Format(time.RFC3339)
	}
	return d
}

func (d *drawServer) proof(user string) map[string]any {
	if p, ok := d.proofs[user]; ok {
		return p
	}
	i, ok := d.users[user]
	if !ok {
		return nil
	}
	leaf := draw.Leaf(d.entries[i])
	return map[string]any{"entry_id": d.entries[i].ID, "variant": d.entries[i].Variant, "leaf": hex.EncodeToString(leaf[:]),
		"path": d.tree.Proof(i), "root": d.result["entries_root"], "index": i, "proof_version": draw.ProofVersion}
}

func (d *drawServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/seckill/s1/draw/result":
			_ = json.NewEncoder(w).Encode(d.result)
		case "/seckill/s1/draw/entries":
			// Pages in entry-id order, each starting after the entry id it is given.
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			after := r.URL.Query().Get("after")
			i := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].ID > after })
			end := min(i+limit, len(d.entries))
			page := map[string]any{"entries": d.entries[i:end]}
			if end < len(d.entries) {
				page["next"] = d.entries[end-1].ID
			}
			_ = json.NewEncoder(w).Encode(page)
		case "/seckill/s1/draw/proof":
			p := d.proof(r.Header.Get("X-User-ID"))
			if p == nil {
				http.Error(w, `{"code":"not_found"}`, http.StatusNotFound)
				return
			}
			_ = json.NewEncoder(w).Encode(p)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func verifyDraw(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"verify-draw"}, args...), &out, &errOut)
	t.Logf("exit %d\n%s%s", code, out.String(), errOut.String())
	return code, out.String() + errOut.String()
}

func TestVerifyDrawPassesATrueDrawAndAProof(t *testing.T) {
	d := newDrawServer()
	url := d.start(t)
	// Pages of 7: the entries come in six requests, the last one short.
	code, out := verifyDraw(t, "-url", url, "-sale", "s1", "-page", "7", "-proof-user", "u5", "-entry-id", "00000006")
	if code != 0 {
		t.Fatalf("a true draw: exit %d", code)
	}
	for _, want := range []string{"PASS  the seed opens the commitment", "PASS  the 40 entries open the root",
		"variant a: 18 entries, 5 winners over 2 waves", "variant b: 8 entries, 2 winners over 1 wave",
		"user u5's entry 00000006 (variant b): the proof is of the entry id the user received at entry",
		"user u5's entry 00000006 (variant b): its Merkle path of 6 hashes, of leaf 5 of 40, leads to the published root (proof version 2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// The one-call form the whole-system tests use sees the same draw and the same proofs.
func TestDrawcheckVerifyIsTheCommandInOneCall(t *testing.T) {
	d := newDrawServer()
	url := d.start(t)
	r, err := drawcheck.Verify(context.Background(), url, "s1", "u5", "u30")
	if err != nil || !r.OK() {
		t.Fatalf("a true draw: %v\n%s", err, r)
	}
	d.result["seed"] = hex.EncodeToString(bytes.Repeat([]byte{0x43}, 32))
	if r, err := drawcheck.Verify(context.Background(), url, "s1"); err != nil || r.OK() {
		t.Fatalf("a wrong seed: %v\n%s", err, r)
	}
	if _, err := drawcheck.Verify(context.Background(), url, "s1", "nobody"); err == nil {
		t.Fatal("a proof the server refuses is not an error")
	}
}

// Each corruption is what a rigged draw would publish; verify-draw must FAIL (exit 1) and say
// which check failed.
func TestVerifyDrawCatchesARiggedDraw(t *testing.T) {
	cases := []struct {
		name, want string
		args       []string
		corrupt    func(d *drawServer)
	}{
		{"an entry changed after the close", "the published root is", nil, func(d *drawServer) {
			d.entries[17].Variant = "a"
		}},
		{"an entry dropped from the list", "the result says 40 entries, the list holds 39", nil, func(d *drawServer) {
			d.entries = append(d.entries[:3:3], d.entries[4:]...)
		}},
		{"a winner swapped with a loser", "variant a wave 1: winners", nil, func(d *drawServer) {
			w := d.result["waves"].([]any)[0].(map[string]any)
			w["winners"].([]string)[1] = d.ranked["a"][9].ID
		}},
		{"a seed that is not the committed one", "does not open the commitment", nil, func(d *drawServer) {
			d.result["seed"] = hex.EncodeToString(bytes.Repeat([]byte{0x43}, 32))
		}},
		{"a second wave that skips a rank", "variant a wave 2 starts at position 4", nil, func(d *drawServer) {
			w := d.result["waves"].([]any)[3].(map[string]any)
			w["from"], w["to"] = 4, 6
			w["winners"] = []string{d.ranked["a"][4].ID, d.ranked["a"][5].ID}
		}},
		{"a proof whose path does not lead to the root", "does not lead to the root", []string{"-proof-user", "u5"}, func(d *drawServer) {
			p := d.proof("u5")
			path := append([]string(nil), p["path"].([]string)...)
			path[2] = path[2][:2] + strings.Repeat("0", 64) // same side, wrong hash
			p["path"] = path
			d.proofs["u5"] = p
		}},
		{"a proof for another variant than the entry's", "is not SHA-256", []string{"-proof-user", "u5"}, func(d *drawServer) {
			p := d.proof("u5")
			p["variant"] = "a"
			d.proofs["u5"] = p
		}},
		// What a dishonest server could do with a proof, each refused.
		{"another entrant's proof (true, but not the user's)", "the proof is of entry 00000008, but the user entered as 00000006",
			[]string{"-proof-user", "u5", "-entry-id", "00000006"}, func(d *drawServer) {
				d.proofs["u5"] = d.proof("u7")
			}},
		{"a proof whose sides are not its index's", "is not the one of this leaf index", []string{"-proof-user", "u5"}, func(d *drawServer) {
			p := d.proof("u5")
			p["index"] = 4 // leaf 5's path claimed for leaf 4: the first step is on the wrong side
			d.proofs["u5"] = p
		}},
		{"a proof one step short", "is not the one of this leaf index", []string{"-proof-user", "u5"}, func(d *drawServer) {
			p := d.proof("u5")
			p["path"] = p["path"].([]string)[1:]
			d.proofs["u5"] = p
		}},
		{"a proof of another version than the result", "the proof is of version 1, the result of version 2", []string{"-proof-user", "u5"}, func(d *drawServer) {
			p := d.proof("u5")
			p["proof_version"] = 1
			d.proofs["u5"] = p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDrawServer()
			tc.corrupt(d)
			code, out := verifyDraw(t, append([]string{"-url", d.start(t), "-sale", "s1", "-page", "10"}, tc.args...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (FAIL)", code)
			}
			if !strings.Contains(out, "FAIL  ") || !strings.Contains(out, tc.want) {
				t.Fatalf("output does not name the failure %q", tc.want)
			}
		})
	}
}

// A shop saves the draw once and checks it offline: the file passes as the server did, and a
// file edited afterwards fails.
func TestVerifyDrawChecksASavedFileOffline(t *testing.T) {
	d := newDrawServer()
	path := filepath.Join(t.TempDir(), "draw.json")
	if code, _ := verifyDraw(t, "-url", d.start(t), "-sale", "s1", "-save", path); code != 0 {
		t.Fatalf("fetch and save: exit %d", code)
	}
	// Offline: the URL points nowhere.
	if code, out := verifyDraw(t, "-file", path, "-url", "http://127.0.0.1:1"); code != 0 || !strings.Contains(out, "PASS  the 40 entries open the root") {
		t.Fatalf("the saved file: exit %d", code)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f["format"] != "seckill-draw/1" || f["sale"] != "s1" || len(f["entries"].([]any)) != 40 {
		t.Fatalf("the file is not the documented format: format %v sale %v", f["format"], f["sale"])
	}
	f["entries"].([]any)[0].(map[string]any)["variant"] = "c"
	b, _ = json.Marshal(f)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := verifyDraw(t, "-file", path); code != 1 {
		t.Fatalf("an edited file: exit %d, want 1", code)
	}
	if code, _ := verifyDraw(t); code != 2 {
		t.Fatalf("no sale, no file: exit %d, want 2", code)
	}
}

// quicknetRound123 is a real round of drand's quicknet (round 123, as
// https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/public/123
// publishes it): the test draws with it as its beacon.
func quicknetRound123() *draw.Beacon {
	b := draw.Quicknet
	b.Round = 123
	b.Signature = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92"
	rnd, err := b.VerifyRound(b.Round, b.Signature)
	if err != nil {
		panic(err)
	}
	b.Randomness = hex.EncodeToString(rnd[:])
	return &b
}

func TestVerifyDrawChecksTheBeaconRoundAndTheDerivedSeed(t *testing.T) {
	d := newDrawServerWith(quicknetRound123())
	code, out := verifyDraw(t, "-url", d.start(t), "-sale", "s1", "-proof-user", "u5")
	if code != 0 {
		t.Fatalf("a true draw with a beacon: exit %d", code)
	}
	for _, want := range []string{"PASS  the beacon is drand's quicknet", "PASS  beacon round 123 is published at 2023-08-23T15:15:33Z, after the entries closed",
		"PASS  beacon round 123: its BLS signature verifies", "PASS  the ranking's seed is HMAC-SHA256(seed, \"seckill-draw-seed-v1\"",
		"by HMAC-SHA256(effective seed, entry id)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The same draw without a beacon says what it is.
	if _, out := verifyDraw(t, "-url", newDrawServer().start(t), "-sale", "s1"); !strings.Contains(out, "commit-reveal only") {
		t.Error("a draw without a beacon does not say it is commit-reveal only")
	}
}

// What a rigged draw with a beacon would publish: verify-draw must FAIL and say why.
func TestVerifyDrawCatchesARiggedBeacon(t *testing.T) {
	// Another chain's key (a valid G2 point: the stand-in beacon's).
	stand := drandtest.New("verify-draw forger", 3*time.Second, time.Now())
	defer stand.Close()
	cases := []struct {
		name, want string
		corrupt    func(d *drawServer)
	}{
		{"a forged signature", "does not verify", func(d *drawServer) {
			b := *d.result["beacon"].(*draw.Beacon)
			b.Signature = "a" + b.Signature[1:]
			d.result["beacon"] = &b
		}},
		{"another round's signature", "does not verify", func(d *drawServer) {
			b := *d.result["beacon"].(*draw.Beacon)
			b.Round = 124
			d.result["beacon"] = &b
		}},
		{"quicknet's hash with another key", "quicknet's chain hash with another public key", func(d *drawServer) {
			b := *d.result["beacon"].(*draw.Beacon)
			b.PublicKey = stand.Chain.PublicKey
			d.result["beacon"] = &b
		}},
		{"a round published before the close", "not after the entries closed", func(d *drawServer) {
			d.result["closes_at"] = "2023-08-23T15:16:00Z"
		}},
		// Round 123 is out after this close too, but it is not the first after it (122 is).
		{"a later round than the first after the close", "beacon round 123 is not round 122, the first published after the entries closed", func(d *drawServer) {
			d.result["closes_at"] = "2023-08-23T15:15:29Z"
		}},
		{"a result that does not say when the entries closed", "cannot be checked against the close", func(d *drawServer) {
			delete(d.result, "closes_at")
		}},
		{"quicknet's hash with another genesis", "another period or genesis", func(d *drawServer) {
			b := *d.result["beacon"].(*draw.Beacon)
			b.GenesisTime -= 3
			d.result["beacon"] = &b
		}},
		{"a ranking by the bare seed", "variant a wave 1: winners", func(d *drawServer) {
			bare := newDrawServer()
			d.result["waves"] = bare.result["waves"]
		}},
		{"an effective seed that is not the derivation", "is not HMAC-SHA256", func(d *drawServer) {
			d.result["effective_seed"] = strings.Repeat("00", 32)
		}},
		{"a beacon named, randomness said commit-reveal", "want \"commit-reveal+drand\"", func(d *drawServer) {
			d.result["randomness"] = draw.RandomnessCommitReveal
		}},
		{"randomness not SHA-256 of the signature", "is not SHA-256 of the round's signature", func(d *drawServer) {
			b := *d.result["beacon"].(*draw.Beacon)
			b.Randomness = strings.Repeat("11", 32)
			d.result["beacon"] = &b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDrawServerWith(quicknetRound123())
			tc.corrupt(d)
			code, out := verifyDraw(t, "-url", d.start(t), "-sale", "s1")
			if code != 1 || !strings.Contains(out, "FAIL  ") || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 1 naming %q", code, tc.want)
			}
		})
	}
}

// Offline, the saved file checks the beacon's signature too: nothing is fetched from drand.
func TestVerifyDrawChecksASavedBeaconDrawOffline(t *testing.T) {
	d := newDrawServerWith(quicknetRound123())
	path := filepath.Join(t.TempDir(), "draw.json")
	if code, _ := verifyDraw(t, "-url", d.start(t), "-sale", "s1", "-save", path); code != 0 {
		t.Fatalf("fetch and save: exit %d", code)
	}
	if code, out := verifyDraw(t, "-file", path); code != 0 || !strings.Contains(out, "PASS  beacon round 123: its BLS signature verifies") {
		t.Fatalf("the saved file: exit %d", code)
	}
	b, _ := os.ReadFile(path)
	b = bytes.Replace(bytes.Replace(b, []byte(`"round":123`), []byte(`"round":122`), 1), []byte(`"round": 123`), []byte(`"round": 122`), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := verifyDraw(t, "-file", path); code != 1 {
		t.Fatalf("a file naming another round: exit %d, want 1", code)
	}
}

// The commitment an entrant saved when he entered is the one the draw must open: a draw
// re-rolled afterwards publishes a seed that opens its own new commitment, which the published
// data alone cannot tell from a true draw. With -commitment, verify-draw compares the two and
// FAILs when they differ, online and offline; a -commitment that is no commitment is a usage
// error.
func TestVerifyDrawFailsWhenTheCommitmentIsNotTheOneSaved(t *testing.T) {
	d := newDrawServer()
	url := d.start(t)
	published := d.result["seed_commitment"].(string)
	saved := draw.Commitment(bytes.Repeat([]byte{0x41}, 32)) // what the entrants saw before the re-roll
	if code, out := verifyDraw(t, "-url", url, "-sale", "s1"); code != 0 {
		t.Fatalf("without -commitment the re-rolled draw is consistent in itself: exit %d\n%s", code, out)
	}
	code, out := verifyDraw(t, "-url", url, "-sale", "s1", "-commitment", saved)
	if code != 1 || !strings.Contains(out, "FAIL  the published commitment "+published+" is not the one you saved, "+saved) {
		t.Fatalf("a commitment other than the saved one: exit %d, want 1 naming both", code)
	}
	path := filepath.Join(t.TempDir(), "draw.json")
	if code, out := verifyDraw(t, "-url", url, "-sale", "s1", "-save", path, "-commitment", strings.ToUpper(published)); code != 0 ||
		!strings.Contains(out, "PASS  the published commitment is the one you saved") {
		t.Fatalf("the saved commitment itself: exit %d", code)
	}
	if code, _ := verifyDraw(t, "-file", path, "-commitment", saved); code != 1 {
		t.Fatalf("offline, a commitment other than the saved one: exit %d, want 1", code)
	}
	if code, _ := verifyDraw(t, "-file", path, "-commitment", "abc"); code != 2 {
		t.Fatalf("a -commitment that is not 64 hex digits: exit %d, want 2", code)
	}
}
