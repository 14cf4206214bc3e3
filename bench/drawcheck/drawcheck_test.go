package drawcheck

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract/draw"
)

func entries(vs ...string) []draw.Entry {
	es := make([]draw.Entry, len(vs))
	for i, v := range vs {
		es[i] = draw.Entry{ID: "0000000" + string(rune('1'+i)), Variant: v}
	}
	return es
}

// Between the close and the draw only the entries can be checked: the root passes, the
// ranking is not judged, and a changed entry already fails.
func TestCheckOfAClosedDrawChecksTheEntriesAlone(t *testing.T) {
	es := entries("M", "L", "M")
	res := Result{ProofVersion: draw.ProofVersion, State: "closed", Entries: 3, EntriesRoot: draw.RootOf(es), SeedCommitment: strings.Repeat("ab", 32)}
	if r := Check("s", res, es); !r.OK() || !strings.Contains(r.String(), "the seed is not revealed yet") {
		t.Fatalf("a closed draw:\n%s", r)
	}
	es[1].Variant = "M"
	if r := Check("s", res, es); r.OK() {
		t.Fatalf("a changed entry passed:\n%s", r)
	}
	res.State = "drawn"
	if r := Check("s", res, entries("M", "L", "M")); r.OK() {
		t.Fatalf("a drawn draw without its seed passed:\n%s", r)
	}
	if r := Check("s", Result{ProofVersion: draw.ProofVersion, State: "open"}, nil); r.OK() {
		t.Fatal("an open draw has nothing published: it cannot PASS")
	}
}

// A draw nobody entered has the root of no leaves, SHA-256 of nothing.
func TestCheckOfADrawWithoutEntries(t *testing.T) {
	seed := make([]byte, 32)
	root := draw.EmptyRoot()
	res := Result{ProofVersion: draw.ProofVersion, State: "drawn", EntriesRoot: hex.EncodeToString(root[:]), Seed: hex.EncodeToString(seed), SeedCommitment: draw.Commitment(seed)}
	if r := Check("s", res, nil); !r.OK() {
		t.Fatalf("an empty draw:\n%s", r)
	}
	res.Waves = []Wave{{Wave: 1, Variant: "M", From: 0, To: 1, Winners: []string{"00000001"}}}
	if r := Check("s", res, nil); r.OK() {
		t.Fatalf("a winner without entries passed:\n%s", r)
	}
}

// Entries out of order (or listed twice) are refused before anything is recomputed from them.
func TestCheckRefusesEntriesOutOfOrder(t *testing.T) {
	es := entries("M", "L", "M")
	es[0], es[1] = es[1], es[0]
	res := Result{ProofVersion: draw.ProofVersion, State: "closed", Entries: 3, EntriesRoot: draw.RootOf(es)}
	if r := Check("s", res, es); r.OK() || !strings.Contains(r.String(), "not in increasing entry-id order") {
		t.Fatalf("entries out of order:\n%s", r)
	}
}

// A server whose pages never end (its "next" does not move on) is an error, not a hang.
func TestFetchStopsAtAPageThatDoesNotMoveOn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/result") {
			_, _ = w.Write([]byte(`{"state":"closed"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"entries": entries("M"), "next": "00000001"})
	}))
	defer srv.Close()
	if _, err := (Client{Base: srv.URL}).Fetch(context.Background(), "s"); err == nil || !strings.Contains(err.Error(), "next") {
		t.Fatalf("a page loop: %v", err)
	}
}
