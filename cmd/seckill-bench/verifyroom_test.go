package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func roomFixture(n int) (commitment, seedHex string, entries []string) {
	seed := bytes.Repeat([]byte{7}, 32)
	sum := sha256.Sum256(seed)
	for i := range n {
		entries = append(entries, fmt.Sprintf("entry%017d", i))
	}
	rank := func(e string) []byte { m := hmac.New(sha256.New, seed); m.Write([]byte(e)); return m.Sum(nil) }
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(rank(entries[i]), rank(entries[j])) < 0 })
	return hex.EncodeToString(sum[:]), hex.EncodeToString(seed), entries
}

func TestVerifyRoomAcceptsTheSeedsOrderAndCatchesEveryDeparture(t *testing.T) {
	c, s, e := roomFixture(200)
	if p := verifyRoomOrder(c, s, e); len(p) != 0 {
		t.Fatalf("the true order refused: %v", p)
	}
	swapped := append([]string(nil), e...)
	swapped[10], swapped[11] = swapped[11], swapped[10]
	if p := verifyRoomOrder(c, s, swapped); len(p) == 0 {
		t.Fatal("two places swapped: accepted")
	}
	if p := verifyRoomOrder(strings.Repeat("0", 64), s, e); len(p) == 0 {
		t.Fatal("a seed that is not the committed one: accepted")
	}
	if p := verifyRoomOrder(c, s, append(e, e[len(e)-1])); len(p) == 0 {
		t.Fatal("an entry twice: accepted")
	}
}

func TestVerifyRoomCommandReadsAGatewayAndLocatesAnEntry(t *testing.T) {
	c, s, e := roomFixture(50)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/seckill/s1/room":
			_ = json.NewEncoder(w).Encode(map[string]any{"state": "ended", "seed_commitment": c, "seed": s})
		case "/seckill/s1/room/prequeue":
			// Pages of 20, as a gateway serves them with ?limit=20.
			after, _ := strconv.Atoi(r.URL.Query().Get("after"))
			end := min(after+20, len(e))
			page := map[string]any{"seed": s, "entries": e[after:end], "total": len(e)}
			if end < len(e) {
				page["next"] = strconv.Itoa(end)
			}
			_ = json.NewEncoder(w).Encode(page)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"verify-room", "-gateway", srv.URL, "-sale", "s1", "-entry", e[7]}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "place 8 of 50") {
		t.Fatalf("output does not locate the entry: %s", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"verify-room", "-gateway", srv.URL, "-sale", "other"}, &out, &errOut); code != 2 {
		t.Fatalf("a sale without a room: exit %d", code)
	}
}
