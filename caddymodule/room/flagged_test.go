//go:build integration

package room

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// fieldsOf is the sorted field names of a JSON object answer.
func fieldsOf(t testing.TB, raw string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// Flagged entrants, through two gateways: a low score, a bad token under on_fail flag, and a
// request a flag rule matches. They get places, tickets and answers like anyone, are never
// admitted while every unit's admission goes to the others, and the published order lists
// their entries as it lists everyone's.
var (
	flaggedSiteverify *botchecktest.Siteverify
	flaggedGateway    = gateway(gatewayConfig{Two: true, Setup: func(tb testing.TB, c *gatewayConfig) {
		flaggedSiteverify = botchecktest.NewSiteverify(tb, "test-secret", map[string]botchecktest.Answer{
			"human": {Body: `{"success":true,"hostname":"127.0.0.1","action":"enter","score":0.9}`},
			"bot":   {Body: `{"success":true,"hostname":"127.0.0.1","action":"enter","score":0.1}`},
		})
		c.Room = map[string]any{
			"challenge_provider": map[string]any{"name": "recaptcha", "secret": "test-secret", "verify_url": flaggedSiteverify.URL,
				"action": "enter", "min_score": 0.5, "on_fail": "flag"},
			"flag": []any{map[string]any{"header": map[string]any{"User-Agent": []string{"*curl*"}}}},
		}
	}})
)

func TestFlaggedEntrantsAreNeverAdmittedAndAnsweredLikeAnyone(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw1, gw2 := flaggedGateway.Two(t)
	gws := []string{gw1, gw2}
	// Entries in the pre-queue: the order is the seed's permutation, so the flagged places
	// fall anywhere in it. The test takes a seed that puts a flagged place before the third
	// human's, so the admissions must pass one (a random seed does in about five draws of six).
	humans := []string{"human-0", "human-1", "human-2", "human-3", "human-4", "human-5"}
	bots := []string{"bot-score", "bot-badtoken", "bot-notoken", "bot-curl"}
	flaggedEarly := func(sale string, seed, ekey []byte) bool {
		rankOf := func(u string) []byte { p := core.PlaceOf(ekey, seed, sale, u); return p.Rank[:] }
		var hr [][]byte
		for _, u := range humans {
			hr = append(hr, rankOf(u))
		}
		slices.SortFunc(hr, bytes.Compare)
		for _, u := range bots {
			if bytes.Compare(rankOf(u), hr[2]) < 0 {
				return true
			}
		}
		return false
	}
	// The start is far, so every entry is in the pre-queue however loaded the machine; the
	// test moves it to now once they are.
	r := newRoom(t, rdb, 3, 10*time.Minute, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "120000", Order: flaggedEarly})
	t.Cleanup(func() { rdb.Del(context.Background(), contract.RoomFlaggedKey(r.Sale)) })

	token := func(v string) map[string]string { return map[string]string{botcheckcaddy.Header: v} }
	type entrant struct {
		user    string
		headers map[string]string
		gw      string
		flagged bool
		ticket  string
		entryID string
	}
	var people []*entrant
	people = append(people,
		&entrant{user: "bot-score", headers: token("bot"), flagged: true},
		&entrant{user: "bot-badtoken", headers: token("forged"), flagged: true},
		&entrant{user: "bot-notoken", flagged: true},
		&entrant{user: "bot-curl", headers: map[string]string{botcheckcaddy.Header: "human", "User-Agent": "curl/8.5.0"}, flagged: true},
	)
	for i := range 6 {
		people = append(people, &entrant{user: fmt.Sprintf("human-%d", i), headers: token("human")})
	}
	for i, p := range people {
		p.gw = gws[i%2]
		got := enter(t, p.gw, r.Sale, p.user, p.headers)
		if got.Status != http.StatusOK || got.State != "waiting" || got.Ticket == "" || got.EntryID == "" {
			t.Fatalf("%s's entry: %d %s", p.user, got.Status, got.Raw)
		}
		p.ticket, p.entryID = got.Ticket, got.EntryID
	}
	if n := flaggedSiteverify.Calls.Load(); n != 9 {
		t.Fatalf("the provider was asked %d times for 9 entries with a token", n)
	}
	flaggedSet, err := rdb.SMembers(context.Background(), contract.RoomFlaggedKey(r.Sale)).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(flaggedSet)
	if want := []string{"bot-badtoken", "bot-curl", "bot-notoken", "bot-score"}; !slices.Equal(flaggedSet, want) {
		t.Fatalf("the flagged set holds %v, want %v", flaggedSet, want)
	}

	starts := redisNow(t, rdb).Add(300 * time.Millisecond)
	rdb.HSet(context.Background(), contract.MetaKey(r.Sale), "starts_ms", starts.UnixMilli())
	testenv.WaitFor(t, 15*time.Second, "the start", func() bool { return !redisNow(t, rdb).Before(starts) })

	// Everyone polls, through both gateways in turn, until three humans are admitted (3 units,
	// oversubscribe 1), and a while longer: the admissions stay with them.
	admitted := map[string]bool{}
	var humanWaiting, botWaiting []string // raw answers of waiting polls after the admissions
	deadline := time.Now().Add(60 * time.Second)
	round := 0
	for ; time.Now().Before(deadline); round++ {
		for i, p := range people {
			got := poll(t, gws[(i+round)%2], r.Sale, p.user, p.ticket)
			if got.Status != http.StatusOK {
				t.Fatalf("%s's poll: %d %s", p.user, got.Status, got.Raw)
			}
			switch got.State {
			case "admitted":
				if p.flagged {
					t.Fatalf("flagged %s was admitted: %s", p.user, got.Raw)
				}
				admitted[p.user] = true
			case "waiting":
				if len(admitted) == 3 {
					if p.flagged {
						botWaiting = append(botWaiting, got.Raw)
					} else {
						humanWaiting = append(humanWaiting, got.Raw)
					}
				}
			default:
				t.Fatalf("%s's poll: %s", p.user, got.Raw)
			}
		}
		if len(admitted) == 3 && len(botWaiting) >= 4*5 && len(humanWaiting) >= 3*5 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if len(admitted) != 3 {
		t.Fatalf("admitted %v after %d rounds of polls, want three humans", admitted, round)
	}
	if len(botWaiting) < 20 || len(humanWaiting) < 15 {
		t.Fatalf("too few waiting answers after the admissions: %d flagged, %d others", len(botWaiting), len(humanWaiting))
	}
	// The same shape: a waiting answer of a flagged waiter has exactly the fields of another
	// waiter's.
	want := fieldsOf(t, humanWaiting[0])
	for _, raw := range append(botWaiting, humanWaiting...) {
		if got := fieldsOf(t, raw); got != want {
			t.Fatalf("a waiting answer with fields %s, another with %s:\n%s\n%s", got, want, raw, humanWaiting[0])
		}
	}
	for _, raw := range botWaiting {
		var a reply
		_ = json.Unmarshal([]byte(raw), &a)
		if a.Position < 1 || a.EstimatedWaitS < 0 || a.RefreshS < 1 {
			t.Fatalf("a flagged waiter's answer: %s", raw)
		}
	}
	// The log passes the flagged places and admits the others in the seed's order: the
	// verifier's check of invariant 6 passes.
	checks, err := invariants.Room(context.Background(), rdb, r.Sale, nil, invariants.RoomOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if checks[0].Verdict != invariants.Pass {
		t.Fatalf("invariant 6: %+v", checks[0])
	}
	log, _ := rdb.LRange(context.Background(), contract.RoomLogKey(r.Sale), 0, -1).Result()
	passed := 0
	for _, e := range log {
		if strings.HasPrefix(e, "f:") {
			passed++
		}
	}
	if passed == 0 {
		t.Fatalf("no flagged place passed in the log: %v", log)
	}

	// The published order, after the end, lists every entry, the flagged ones too, and
	// nothing but entry ids.
	rdb.HSet(context.Background(), contract.MetaKey(r.Sale), "ends_ms", redisNow(t, rdb).UnixMilli())
	testenv.WaitFor(t, 10*time.Second, "the pre-queue list", func() bool {
		return do(t, http.MethodGet, gw1+"/seckill/"+r.Sale+"/room/prequeue", "", nil).Status == 200
	})
	page := do(t, http.MethodGet, gw1+"/seckill/"+r.Sale+"/room/prequeue", "", nil)
	if f := fieldsOf(t, page.Raw); f != "entries,seed,total" && f != "entries,next,seed,total" {
		t.Fatalf("the published order has the fields %s", f)
	}
	list := fetchPrequeue(t, gw1, r.Sale)
	for _, p := range people {
		if !slices.Contains(list.Entries, p.entryID) {
			t.Fatalf("%s's entry %s is not in the published order %v", p.user, p.entryID, list.Entries)
		}
	}
	if len(list.Entries) != len(people) {
		t.Fatalf("the published order has %d entries, want %d", len(list.Entries), len(people))
	}
}
