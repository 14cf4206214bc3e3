//go:build integration

package room

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Serial: it must see 1 s sessions reach the cap and lapse within its 4 s of polls.
func TestAdmissionsNeverOutrunTheRateNorStockTimesOversubscribeAndLapsesFreeTheirPlace(t *testing.T) {
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	ctx := context.Background()
	// 4 units x 1.5 = 6 live admissions at most; 5 admissions per second; 1 s sessions.
	r := newRoom(t, rdb, 4, 10*time.Minute, time.Hour, roomArgs{Rate: "5", Oversubscribe: "1.5", SessionMS: "1000"})
	tickets := map[string]string{}
	for i := range 20 {
		u := fmt.Sprintf("u%02d", i)
		a := enter(t, gw, r.Sale, u, nil)
		if a.Status != 200 {
			t.Fatalf("enter %s: %d %s", u, a.Status, a.Raw)
		}
		tickets[u] = a.Ticket
	}
	// Whole milliseconds, as Redis keeps it: a start with microseconds would make the bound
	// below up to 1 ms later than the script's, and fail a correct room by one admission.
	starts := time.UnixMilli(redisNow(t, rdb).Add(200 * time.Millisecond).UnixMilli())
	rdb.HSet(ctx, contract.MetaKey(r.Sale), "starts_ms", starts.UnixMilli())
	testenv.WaitFor(t, 5*time.Second, "the start", func() bool { return !redisNow(t, rdb).Before(starts) })

	admittedOf := func() int64 { v, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "admitted").Int64(); return v }
	sawCap, sawLapse := false, false
	var firstAdmitted string
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		p := poll(t, gw, r.Sale, "u19", tickets["u19"])
		if p.Status != 200 {
			t.Fatalf("poll: %d %s", p.Status, p.Raw)
		}
		now := redisNow(t, rdb)
		admitted := admittedOf()
		// Rate: the allowance grows at 5/s from the start, so the admissions so far never
		// exceed 5 x elapsed. Elapsed as the script counts it: from starts_ms (the start cut
		// to whole milliseconds, as stored), in microseconds, with the allowance's stored
		// rounding (6 decimals per call) as the only slack; cutting both ends to whole
		// milliseconds here made a crossing within the same millisecond look one over.
		elapsed := float64(now.UnixMicro()-starts.UnixMilli()*1000) / 1e6
		if limit := math.Floor(5*elapsed + 1e-3); float64(admitted) > limit {
			t.Fatalf("%d admitted %v after the start: above the rate's %v", admitted, now.Sub(starts), limit)
		}
		live := rdb.ZCard(ctx, contract.RoomLiveKey(r.Sale)).Val()
		if live > 6 {
			t.Fatalf("%d live admissions: above 4 units x 1.5", live)
		}
		if live == 6 {
			sawCap = true
		}
		if admitted > 6 {
			sawLapse = true // only lapses free places beyond the first six
		}
		if firstAdmitted == "" && admitted > 0 {
			for u, tk := range tickets {
				if poll(t, gw, r.Sale, u, tk).State == "admitted" {
					firstAdmitted = u
					break
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawCap || !sawLapse {
		t.Fatalf("the test did not reach the cap (%v) or a lapse (%v)", sawCap, sawLapse)
	}
	if lapsed, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "lapsed").Int64(); lapsed == 0 {
		t.Fatal("no admission lapsed in 4 s of 1 s sessions")
	}
	// The first admitted never used its admission: its place is gone, and it is told why.
	if firstAdmitted == "" {
		t.Fatal("no admitted user seen")
	}
	p := poll(t, gw, r.Sale, firstAdmitted, tickets[firstAdmitted])
	if p.State != "ended" || p.Reason != "lapsed" {
		t.Fatalf("a lapsed admission answers %s", p.Raw)
	}
	again := enter(t, gw, r.Sale, firstAdmitted, nil)
	if again.State != "ended" || again.Reason != "lapsed" {
		t.Fatalf("entering again after a lapse gives a new place: %s", again.Raw)
	}
}

// Serial: it times the sold-out's way to the waiters (a second).
func TestSoldOutReachesWaitersOnBothGatewaysWithinASecondAndAReleasedUnitAdmitsTheNext(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	gwA := plainGateway.Base(t)
	gwB := secondProcess(t, gatewayConfig{})
	// One unit, one admission at a time.
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	buyer := enter(t, gwA, r.Sale, "buyer", nil)
	if buyer.State != "admitted" {
		t.Fatalf("the first in line: %s, want admitted", buyer.Raw)
	}
	waitA := enter(t, gwA, r.Sale, "waiterA", nil)
	waitB := enter(t, gwB, r.Sale, "waiterB", nil)
	if waitA.State != "waiting" || waitB.State != "waiting" || waitA.Position != 1 || waitB.Position != 2 {
		t.Fatalf("waiters: %s / %s", waitA.Raw, waitB.Raw)
	}

	tok := do(t, http.MethodPost, gwA+"/seckill/"+r.Sale+"/token", "buyer", nil)
	if tok.Status != 200 {
		t.Fatalf("token: %d %s", tok.Status, tok.Raw)
	}
	bought := do(t, http.MethodPost, gwB+"/seckill/"+r.Sale+"/buy", "buyer", map[string]string{"X-Seckill-Token": tok.Token})
	if bought.Status != http.StatusAccepted {
		t.Fatalf("buy: %d %s", bought.Status, bought.Raw)
	}
	soldAt := time.Now()
	for _, w := range []struct{ gw, user, ticket string }{{gwA, "waiterA", waitA.Ticket}, {gwB, "waiterB", waitB.Ticket}, {gwA, "waiterB", waitB.Ticket}, {gwB, "waiterA", waitA.Ticket}} {
		for {
			p := poll(t, w.gw, r.Sale, w.user, w.ticket)
			if p.State == "sold_out" {
				break
			}
			if time.Since(soldAt) > time.Second {
				t.Fatalf("%s on %s still hears %s a second after the last unit sold", w.user, w.gw, p.Raw)
			}
		}
	}
	if n := rdb.ZCard(ctx, contract.RoomLiveKey(r.Sale)).Val(); n > 1 {
		t.Fatalf("%d live admissions after sold out", n)
	}

	// A unit comes back (unpaid release): the gate's restock event clears the flags, and the
	// next in line is admitted.
	rdb.HIncrBy(ctx, contract.MetaKey(r.Sale), "stock", 1)
	rdb.Publish(ctx, contract.EventsChannel, contract.EventRestock+":"+r.Sale)
	rdb.HDel(ctx, contract.BuyersKey(r.Sale), "buyer")
	rdb.ZRem(ctx, contract.RoomLiveKey(r.Sale), "buyer")
	testenv.WaitFor(t, 5*time.Second, "the next in line to be admitted", func() bool {
		return poll(t, gwB, r.Sale, "waiterA", waitA.Ticket).State == "admitted"
	})
	// Gateway A hears the restock on its own subscription, maybe a moment after B: until then
	// its sold-out flag still answers. The second waiter must then be waiting, first in line.
	var last reply
	testenv.WaitFor(t, 5*time.Second, "gateway A to hear the restock", func() bool {
		last = poll(t, gwA, r.Sale, "waiterB", waitB.Ticket)
		return last.State != "sold_out"
	})
	if last.State != "waiting" || last.Position != 1 {
		t.Fatalf("the second waiter: %s, want waiting at position 1", last.Raw)
	}
}

func TestChallengesReplayedForeignExpiredAndTooEasyAreRefused(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	r := newRoom(t, rdb, 10, -time.Second, time.Hour, roomArgs{DifficultyMin: "6", DifficultyMax: "8"})
	get := func(user string) reply {
		c := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/challenge", user, nil)
		if c.Status != 200 || c.Difficulty < 6 || c.Challenge == "" {
			t.Fatalf("challenge: %d %s", c.Status, c.Raw)
		}
		return c
	}
	pow := func(ch, sol string) map[string]string {
		return map[string]string{sealed.HeaderChallenge: ch, sealed.HeaderSolution: sol}
	}
	refused := func(what string, a reply) {
		t.Helper()
		if a.Status != http.StatusForbidden || a.Code != core.CodeInvalidChallenge {
			t.Errorf("%s: %d %s, want 403 invalid_challenge", what, a.Status, a.Raw)
		}
	}
	refused("no proof of work", enter(t, gw, r.Sale, "alice", nil))

	c := get("alice")
	sol := sealed.Solve(c.Challenge, c.Difficulty)
	if a := enter(t, gw, r.Sale, "alice", pow(c.Challenge, sol)); a.Status != 200 || a.Ticket == "" {
		t.Fatalf("a right solution: %d %s", a.Status, a.Raw)
	}
	refused("replayed", enter(t, gw, r.Sale, "alice", pow(c.Challenge, sol)))

	c = get("alice")
	refused("foreign (another user's challenge)", enter(t, gw, r.Sale, "bob", pow(c.Challenge, sealed.Solve(c.Challenge, c.Difficulty))))

	easy := "0"
	for i := 0; sealed.LeadingZeroBits(c.Challenge, easy) >= c.Difficulty; i++ {
		easy = fmt.Sprint(i)
	}
	refused("too easy", enter(t, gw, r.Sale, "alice", pow(c.Challenge, easy)))

	// An expired challenge, sealed with the gateway's own key.
	s := testSealer(t)
	old, _ := s.NewChallenge(r.Sale, "carol", 6, time.Now().Add(-time.Second))
	if a := enter(t, gw, r.Sale, "carol", pow(old, sealed.Solve(old, 6))); a.Status != http.StatusForbidden || a.Code != contract.CodeChallengeExpired {
		t.Errorf("expired: %d %s, want 403 %s", a.Status, a.Raw, contract.CodeChallengeExpired)
	}
	lowered, _ := s.NewChallenge(r.Sale, "carol", 2, time.Now().Add(time.Minute))
	refused("below the room's minimum", enter(t, gw, r.Sale, "carol", pow(lowered, sealed.Solve(lowered, 2))))
	forged := strings.Replace(c.Challenge, "."+fmt.Sprint(c.Difficulty)+".", ".0.", 1)
	refused("forged difficulty", enter(t, gw, r.Sale, "alice", pow(forged, "0")))
}

func TestPausedSaleAnswersPausedAndBadInputGetsContractCodes(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	r := newRoom(t, rdb, 10, -time.Second, time.Hour, roomArgs{})
	a := enter(t, gw, r.Sale, "alice", nil)
	if a.Status != 200 {
		t.Fatalf("enter: %s", a.Raw)
	}
	rdb.HSet(context.Background(), contract.MetaKey(r.Sale), "state", "paused")
	if p := poll(t, gw, r.Sale, "alice", a.Ticket); p.Status != 200 || p.State != "paused" || p.Retry == "" {
		t.Fatalf("poll while paused: %d %s (Retry-After %q)", p.Status, p.Raw, p.Retry)
	}
	if e := enter(t, gw, r.Sale, "bob", nil); e.Status != 503 || e.Code != core.CodePaused || e.Retry == "" {
		t.Fatalf("enter while paused: %d %s", e.Status, e.Raw)
	}
	info := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/room", "", nil)
	if !strings.Contains(info.Raw, `"state":"paused"`) {
		t.Fatalf("room while paused: %s", info.Raw)
	}
	for what, c := range map[string]struct {
		got    reply
		status int
		code   string
	}{
		"no user":          {enter(t, gw, r.Sale, "", nil), 401, "unauthenticated"},
		"bad user":         {enter(t, gw, r.Sale, "a b", nil), 400, "bad_request"},
		"bad sale":         {enter(t, gw, "bad.sale", "alice", nil), 400, "bad_request"},
		"unknown sale":     {enter(t, gw, testenv.ID("nosale"), "alice", nil), 404, "unknown_sale"},
		"foreign ticket":   {poll(t, gw, r.Sale, "bob", a.Ticket), 403, "invalid_ticket"},
		"no ticket":        {poll(t, gw, r.Sale, "alice", ""), 403, "invalid_ticket"},
		"early list":       {do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/room/prequeue", "", nil), 403, core.CodeNotEnded},
		"bad method":       {do(t, http.MethodPut, gw+"/seckill/"+r.Sale+"/queue", "alice", nil), 405, "bad_request"},
		"leave, no ticket": {do(t, http.MethodDelete, gw+"/seckill/"+r.Sale+"/queue", "alice", nil), 403, "invalid_ticket"},
		"leave, no user":   {leave(t, gw, r.Sale, "", a.Ticket), 401, "unauthenticated"},
	} {
		if c.got.Status != c.status || c.got.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", what, c.got.Status, c.got.Raw, c.status, c.code)
		}
	}
}

// A gateway of its own, another process: its Redis is an address where nothing listens.
func TestRedisDownIsUnavailableNeverAnAdmission(t *testing.T) {
	t.Parallel()
	cfg := newGatewayConfig(t, testenv.AMQPURL())
	cfg.RedisAddr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) // nothing listens
	cfg.Room = map[string]any{"timeout": "300ms"}
	gw := startGatewayProcess(t, cfg)
	for _, a := range []reply{
		enter(t, gw, "s1", "alice", nil),
		do(t, http.MethodGet, gw+"/seckill/s1/room", "", nil),
		do(t, http.MethodGet, gw+"/seckill/s1/challenge", "alice", nil),
	} {
		if a.Status != 503 || a.Code != "unavailable" || a.Retry == "" {
			t.Errorf("with Redis down: %d %s (Retry-After %q), want 503 unavailable", a.Status, a.Raw, a.Retry)
		}
	}
}
