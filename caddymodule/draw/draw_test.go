//go:build integration

package draw

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

func TestEnterChangeWithdrawEnterAgainKeepsTheEntryIDAndExactCounters(t *testing.T) {
	// Serial: it counts the entries in the process's metrics, which every test's gateway adds to.
	sale := newDraw(t, testenv.Redis(t), drawArgs{Variants: map[string]int{"42": 2, "43": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)

	entered := testutil.ToFloat64(kitMetrics.Requests.WithLabelValues("enter", "entered"))
	first := enter(t, gw, sale, "alice", "42", nil)
	if first.Status != 200 || first.State != "entered" || first.Variant != "42" || len(first.EntryID) != 8 {
		t.Fatalf("entry: %d %s", first.Status, first.Raw)
	}
	bob := enter(t, gw, sale, "bob", "42", nil)
	if bob.EntryID == first.EntryID || bob.EntryID <= first.EntryID {
		t.Fatalf("bob's entry id %q after alice's %q: ids must be distinct and in arrival order", bob.EntryID, first.EntryID)
	}
	steps := []struct {
		name  string
		do    func() reply
		state string
		n42   int64
		n43   int64
	}{
		{"change size", func() reply { return enter(t, gw, sale, "alice", "43", nil) }, "entered", 1, 1},
		{"same size again", func() reply { return enter(t, gw, sale, "alice", "43", nil) }, "entered", 1, 1},
		{"withdraw", func() reply { return withdraw(t, gw, sale, "alice") }, "withdrawn", 1, 0},
		{"withdraw again", func() reply { return withdraw(t, gw, sale, "alice") }, "withdrawn", 1, 0},
		{"enter again", func() reply { return enter(t, gw, sale, "alice", "42", nil) }, "entered", 2, 0},
	}
	for _, s := range steps {
		r := s.do()
		if r.Status != 200 || r.State != s.state {
			t.Fatalf("%s: %d %s", s.name, r.Status, r.Raw)
		}
		st := status(t, gw, sale, "alice")
		if st.Status != 200 || st.EntryID != first.EntryID || st.State != s.state {
			t.Fatalf("%s: GET %d %s, want entry %s %s", s.name, st.Status, st.Raw, first.EntryID, s.state)
		}
		if fmt.Sprint(st.Variants) != "[42 43]" {
			t.Fatalf("%s: variants %v, want [42 43]", s.name, st.Variants)
		}
		stored, re := counters(t, rdb, sale)
		if stored["42"] != s.n42 || stored["43"] != s.n43 || fmt.Sprint(stored) != fmt.Sprint(re) {
			t.Fatalf("%s: counters %v (entries say %v), want 42=%d 43=%d", s.name, stored, re, s.n42, s.n43)
		}
	}
	// Five answers "entered": alice's and bob's entries, the change, the same size again and
	// alice's new entry.
	if n := testutil.ToFloat64(kitMetrics.Requests.WithLabelValues("enter", "entered")) - entered; n != 5 {
		t.Fatalf("seckill_draw_requests_total{endpoint=enter,outcome=entered} grew by %v, want 5", n)
	}
	if seq := rdb.HGet(context.Background(), contract.DrawKey(sale), "seq").Val(); seq != "2" {
		t.Fatalf("seq %s after two entrants, want 2", seq)
	}
	if ttl := rdb.PTTL(context.Background(), contract.DrawEntriesKey(sale)).Val(); ttl <= 0 {
		t.Fatalf("the entries must expire with the sale, PTTL %v", ttl)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	ctx := context.Background()
	open := newDraw(t, rdb, drawArgs{Variants: map[string]int{"s": 1, "m": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})
	single := newDraw(t, rdb, drawArgs{Variants: map[string]int{"one": 3}, OpensIn: -time.Minute, ClosesIn: time.Hour})
	plain := newDraw(t, rdb, drawArgs{Stock: 3, OpensIn: -time.Minute, ClosesIn: time.Hour})
	later := newDraw(t, rdb, drawArgs{Variants: map[string]int{"s": 1}, OpensIn: time.Hour, ClosesIn: 2 * time.Hour})
	over := newDraw(t, rdb, drawArgs{Variants: map[string]int{"s": 1}, OpensIn: -time.Hour, ClosesIn: -time.Millisecond})
	notDraw := newDraw(t, rdb, drawArgs{Variants: map[string]int{"s": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})
	rdb.HDel(ctx, contract.MetaKey(notDraw), "draw")
	// An entry taken while open, then the draw closes (state, whatever the clock says).
	shut := newDraw(t, rdb, drawArgs{Variants: map[string]int{"s": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})
	if r := enter(t, gw, shut, "carol", "s", nil); r.Status != 200 {
		t.Fatalf("entry: %s", r.Raw)
	}
	rdb.HSet(ctx, contract.DrawKey(shut), "state", "closed")

	url := func(sale string) string { return gw + "/seckill/" + sale + "/draw" }
	for _, c := range []struct {
		name, method, url, user, body string
		status                        int
		code                          string
	}{
		{"no user", "POST", url(open), "", `{"variant":"s"}`, 401, "unauthenticated"},
		{"bad user", "POST", url(open), "a b", `{"variant":"s"}`, 400, "bad_request"},
		{"bad sale", "POST", gw + "/seckill/a.b/draw", "u1", `{"variant":"s"}`, 400, "bad_request"},
		{"unknown sale", "POST", url("nosuchsale" + open), "u1", `{"variant":"s"}`, 404, "unknown_sale"},
		{"not a draw", "POST", url(notDraw), "u1", `{"variant":"s"}`, 404, "unknown_sale"},
		{"not a draw, GET", "GET", url(notDraw), "u1", "", 404, "unknown_sale"},
		{"not a draw, DELETE", "DELETE", url(notDraw), "u1", "", 404, "unknown_sale"},
		{"before opens", "POST", url(later), "u1", `{"variant":"s"}`, 403, "not_open"},
		{"withdraw before opens", "DELETE", url(later), "u1", "", 403, "not_open"},
		{"at close", "POST", url(over), "u1", `{"variant":"s"}`, 403, "closed"},
		{"state closed", "POST", url(shut), "u1", `{"variant":"s"}`, 403, "closed"},
		{"change after close", "POST", url(shut), "carol", `{"variant":"s"}`, 403, "closed"},
		{"withdraw after close", "DELETE", url(shut), "carol", "", 403, "closed"},
		{"unknown variant", "POST", url(open), "u1", `{"variant":"xl"}`, 400, "bad_request"},
		{"no variant of several", "POST", url(open), "u1", `{}`, 400, "bad_request"},
		{"a variant on a sale without", "POST", url(plain), "u1", `{"variant":"s"}`, 400, "bad_request"},
		{"bad variant syntax", "POST", url(open), "u1", `{"variant":"s:1"}`, 400, "bad_request"},
		{"unknown field", "POST", url(open), "u1", `{"variant":"s","size":1}`, 400, "bad_request"},
		{"duplicate key", "POST", url(open), "u1", `{"variant":"s","variant":"m"}`, 400, "bad_request"},
		{"no body", "POST", url(open), "u1", "", 400, "bad_request"},
		{"huge body", "POST", url(open), "u1", `{"variant":"` + string(make([]byte, 2000)) + `"}`, 400, "bad_request"},
		{"GET without entry", "GET", url(open), "nobody", "", 404, "not_entered"},
		{"DELETE without entry", "DELETE", url(open), "nobody", "", 404, "not_entered"},
		{"method", "PUT", url(open), "u1", "", 405, "bad_request"},
	} {
		r := do(t, c.method, c.url, c.user, c.body, nil)
		if r.Status != c.status || r.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Raw, c.status, c.code)
		}
	}
	// Nothing refused was written.
	if n := rdb.HLen(ctx, contract.DrawEntriesKey(open)).Val(); n != 0 {
		t.Fatalf("%d entries after refusals only", n)
	}
	// The only variant is taken when none is named; a sale without variants takes none.
	if r := enter(t, gw, single, "u1", "", nil); r.Status != 200 || r.Variant != "one" {
		t.Fatalf("single variant: %s", r.Raw)
	}
	if r := enter(t, gw, plain, "u1", "", nil); r.Status != 200 || r.Variant != "" || r.State != "entered" {
		t.Fatalf("no variants: %s", r.Raw)
	}
	if r := status(t, gw, plain, "u1"); r.Status != 200 || r.State != "entered" || len(r.Variants) != 0 {
		t.Fatalf("no variants, GET: %s", r.Raw)
	}
}

func TestStatusAfterTheDraw(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	ctx := context.Background()
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"a": 2, "b": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})
	users := []string{"p0", "p1", "p2", "p3", "p4", "q0", "q1", "w0"}
	for _, u := range users {
		v := "a"
		if u[0] == 'q' {
			v = "b"
		}
		if r := enter(t, gw, sale, u, v, nil); r.Status != 200 {
			t.Fatalf("%s: %s", u, r.Raw)
		}
	}
	if r := withdraw(t, gw, sale, "w0"); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	if r := status(t, gw, sale, "p0"); r.State != "entered" || r.Rank != 0 || r.Wave != 0 {
		t.Fatalf("before the draw: %s", r.Raw)
	}
	// The draw as the backend leaves it: positions written back, wave 2 of "a" on positions
	// [2, 4) until an hour from now, "b" done after its only wave ended.
	entries := rdb.HGetAll(ctx, contract.DrawEntriesKey(sale)).Val()
	pos := map[string]int{"p0": 0, "p1": 1, "p2": 2, "p3": 3, "p4": 4, "q0": 0, "q1": 1}
	for u, p := range pos {
		rdb.HSet(ctx, contract.DrawEntriesKey(sale), u, entries[u]+":"+strconv.Itoa(p))
	}
	until := time.Now().Add(time.Hour).UnixMilli()
	rdb.HSet(ctx, contract.DrawKey(sale), "state", "drawn")
	rdb.HSet(ctx, contract.MetaKey(sale), "w:a", fmt.Sprintf("2:2:4:%d", until), "w:b", "1:0:1:1000", "wd:b", "1")
	rdb.HSet(ctx, contract.BuyersKey(sale), "p1", "order-1")

	for _, c := range []struct {
		user, state string
		rank, wave  int64
	}{
		{"p0", "expired", 1, 0},
		{"p1", "claimed", 2, 0},
		{"p2", "won", 3, 2},
		{"p3", "won", 4, 2},
		{"p4", "waiting", 5, 0},
		{"q0", "expired", 1, 1},
		{"q1", "lost", 2, 0},
		{"w0", "withdrawn", 0, 0},
	} {
		r := status(t, gw, sale, c.user)
		if r.Status != 200 || r.State != c.state || r.Rank != c.rank || r.Wave != c.wave {
			t.Errorf("%s: %s, want %s rank %d wave %d", c.user, r.Raw, c.state, c.rank, c.wave)
		}
		if r.EntryID != entries[c.user][:8] {
			t.Errorf("%s: entry id %q, want %q", c.user, r.EntryID, entries[c.user][:8])
		}
		if c.state == "won" {
			got, err := time.Parse(time.RFC3339Nano, r.ClaimUntil)
			if err != nil || got.UnixMilli() != until {
				t.Errorf("%s: claim_until %q, want %d ms", c.user, r.ClaimUntil, until)
			}
		}
	}
	// Once drawn, nothing changes an entry.
	if r := enter(t, gw, sale, "p4", "b", nil); r.Status != 403 || r.Code != "closed" {
		t.Fatalf("entry after the draw: %s", r.Raw)
	}
	if r := withdraw(t, gw, sale, "p2"); r.Status != 403 || r.Code != "closed" {
		t.Fatalf("withdrawal after the draw: %s", r.Raw)
	}
}

// A gateway of its own, another process: its Redis is an address where nothing listens.
func TestRedisDownIsUnavailableWithRetryAfter(t *testing.T) {
	t.Parallel()
	testenv.Redis(t) // the services are required; this gateway points elsewhere
	c := newGatewayConfig(t)
	c.Draw = map[string]any{"timeout": "300ms"}
	dead := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	base := handlertest.StartGateway(t, handlertest.Config(appConfig(dead), c.servers(t, c.Port, 0)), handlertest.Base(c.Port)).Base
	for _, m := range []string{"POST", "GET", "DELETE"} {
		r := do(t, m, base+"/seckill/s1/draw", "u1", `{"variant":"a"}`, nil)
		if r.Status != http.StatusServiceUnavailable || r.Code != "unavailable" || r.Retry == "" {
			t.Errorf("%s with Redis down: %d %q %s", m, r.Status, r.Retry, r.Raw)
		}
	}
}

func TestProofOfWorkIsRequiredAndSingleUse(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"a": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour, DMin: 6, DMax: 10})

	if r := enter(t, gw, sale, "alice", "a", nil); r.Status != 403 || r.Code != contract.CodeInvalidChallenge {
		t.Fatalf("entry without a proof: %s", r.Raw)
	}
	// Both challenge paths serve a draw sale; the shared one passes other sales on (to the
	// stand-in for the room).
	for _, p := range []string{"/challenge", "/draw/challenge"} {
		c := do(t, "GET", gw+"/seckill/"+sale+p, "alice", "", nil)
		if c.Status != 200 || c.Difficulty < 6 || c.Difficulty > 10 || c.Challenge == "" {
			t.Fatalf("GET %s: %s", p, c.Raw)
		}
	}
	if r := do(t, "GET", gw+"/seckill/roomsale/challenge", "alice", "", nil); r.Status != 299 || r.Raw != "room" {
		t.Fatalf("the challenge of a sale that is not a draw must go to the next handler: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "GET", gw+"/seckill/roomsale/draw/challenge", "alice", "", nil); r.Status != 404 || r.Code != "unknown_sale" {
		t.Fatalf("the draw's own challenge path of a sale that is not a draw: %d %s", r.Status, r.Raw)
	}

	c := do(t, "GET", gw+"/seckill/"+sale+"/challenge", "alice", "", nil)
	// That is alice's third open challenge: the room's bound (challenges_per_user 3) holds for
	// the draw too.
	if r := do(t, "GET", gw+"/seckill/"+sale+"/draw/challenge", "alice", "", nil); r.Status != 429 || r.Code != contract.CodeTooManyChallenges || r.Retry == "" {
		t.Fatalf("a fourth open challenge: %d %s (Retry-After %q), want 429 %s", r.Status, r.Raw, r.Retry, contract.CodeTooManyChallenges)
	}
	// An expired challenge, sealed with the gateway's own key, is refused as such.
	s, err := sealed.NewSealer(sealed.Key{ID: "k1", Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := s.NewChallenge(sale, "carol", 6, time.Now().Add(-time.Second))
	oldH := map[string]string{sealed.HeaderChallenge: old, sealed.HeaderSolution: sealed.Solve(old, 6)}
	if r := enter(t, gw, sale, "carol", "a", oldH); r.Status != 403 || r.Code != contract.CodeChallengeExpired {
		t.Fatalf("an expired challenge: %d %s, want 403 %s", r.Status, r.Raw, contract.CodeChallengeExpired)
	}
	sol := sealed.Solve(c.Challenge, c.Difficulty)
	h := map[string]string{sealed.HeaderChallenge: c.Challenge, sealed.HeaderSolution: sol}
	bad := map[string]string{sealed.HeaderChallenge: c.Challenge, sealed.HeaderSolution: wrongSolution(c.Challenge, c.Difficulty)}
	if r := enter(t, gw, sale, "alice", "a", bad); r.Status != 403 || r.Code != contract.CodeInvalidChallenge {
		t.Fatalf("a wrong solution: %s", r.Raw)
	}
	if r := enter(t, gw, sale, "bob", "a", h); r.Status != 403 || r.Code != contract.CodeInvalidChallenge {
		t.Fatalf("alice's challenge presented by bob: %s", r.Raw)
	}
	if r := enter(t, gw, sale, "alice", "a", h); r.Status != 200 || r.State != "entered" {
		t.Fatalf("a solved challenge: %s", r.Raw)
	}
	if r := enter(t, gw, sale, "alice", "a", h); r.Status != 403 || r.Code != contract.CodeInvalidChallenge {
		t.Fatalf("a replayed solution: %s", r.Raw)
	}
	// Withdrawing asks for no proof.
	if r := withdraw(t, gw, sale, "alice"); r.Status != 200 {
		t.Fatalf("withdraw: %s", r.Raw)
	}
	if ttl := rdb.PTTL(context.Background(), lua.DrawSpentKey(sale)).Val(); ttl <= 0 {
		t.Fatalf("the spent nonces must expire, PTTL %v", ttl)
	}
}

// The script holds the proof of work to the draw's dmin as Redis has it now, whatever a
// gateway's cache says, and spends each nonce once.
func TestEntryScriptChecksTheProofAgainstRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"a": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour, DMin: 8, DMax: 8})
	exp := time.Now().Add(time.Minute)
	for _, c := range []struct {
		name string
		call lua.DrawEnterCall
		code int64
	}{
		{"no proof", lua.DrawEnterCall{Sale: sale, User: "u", Variant: "a"}, codePowRequired},
		{"too easy", lua.DrawEnterCall{Sale: sale, User: "u", Variant: "a", Nonce: "n1", NonceExp: exp, Difficulty: 7}, codePowRequired},
		{"enough", lua.DrawEnterCall{Sale: sale, User: "u", Variant: "a", Nonce: "n1", NonceExp: exp, Difficulty: 8}, 0},
		{"replayed", lua.DrawEnterCall{Sale: sale, User: "u", Variant: "a", Nonce: "n1", NonceExp: exp, Difficulty: 8}, codeReplayed},
		{"replayed by another", lua.DrawEnterCall{Sale: sale, User: "v", Variant: "a", Nonce: "n1", NonceExp: exp, Difficulty: 9}, codeReplayed},
		{"withdraw needs none", lua.DrawEnterCall{Sale: sale, User: "u", Withdraw: true}, 0},
	} {
		r, err := c.call.Run(ctx, rdb)
		if err != nil || r.Code != c.code {
			t.Errorf("%s: %+v %v, want code %d", c.name, r, err, c.code)
		}
	}
	if n := rdb.HLen(ctx, contract.DrawEntriesKey(sale)).Val(); n != 1 {
		t.Fatalf("%d entries, want 1 (refusals write nothing)", n)
	}
}

// wrongSolution is a counter that does not meet difficulty.
func wrongSolution(challenge string, difficulty int) string {
	for i := 0; ; i++ {
		if s := strconv.Itoa(i); sealed.LeadingZeroBits(challenge, s) < difficulty {
			return s
		}
	}
}
