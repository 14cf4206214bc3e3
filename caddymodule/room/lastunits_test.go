//go:build integration

package room

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	throttlecore "github.com/seckilledge/seckill/caddymodule/throttle/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The last unit goes to a waiter who can use it, with the room's default presence
// through two gateways behind the demo's kind of throttle: the admission held by a client the
// throttle then bans is passed on at once (ban_zones), and a waiter who stopped polling is
// passed once the refresh_s of his last answer and the grace are over, so the present waiter
// behind them is admitted long before any session could lapse (10 minutes here). Invariants
// 6-9 hold on the log the scripts kept, including the revocation (r:) and the pass (s:).
// Presence: the default. The claim window is long here: this test is about the ban, and the
// fast client takes no token (TestTheLastUnitIsNotHeldASessionByAWaiterWhoTakesNoToken is about
// that). The throttle is this gateway's alone: no other test's user meets its bans.
var bannedGateway = gateway(gatewayConfig{Two: true, Room: map[string]any{"ban_zones": []string{"user"}, "claim_window": "10m"},
	Throttle: map[string]any{"handler": "seckill_throttle", "zones": []any{map[string]any{
		"name": "user", "key": "{http.request.header.X-User-ID}", "window": "1s", "limit": 4,
		"ban": map[string]any{"after": 1, "within": "1m", "for": "1m"},
	}}}})

func TestTheLastUnitGoesToAPresentWaiterNotToAnAbsentOrBannedOne(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	a, b := bannedGateway.Two(t)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "600000"})
	// The throttle's keys are per user, not per sale: a run again within the ban's minute
	// would find fast banned before he enters.
	clearThrottle := func() {
		for _, u := range []string{"fast", "gone", "present"} {
			if ks, err := rdb.Keys(ctx, "seckill:rl:{user:"+u+"}*").Result(); err == nil && len(ks) > 0 {
				rdb.Del(ctx, ks...)
			}
		}
	}
	clearThrottle()
	t.Cleanup(clearThrottle)

	// The one unit's admission goes to the first in line, a fast client.
	fast := enter(t, a, r.Sale, "fast", nil)
	if fast.State != "admitted" {
		t.Fatalf("fast: %s, want admitted", fast.Raw)
	}
	gone := enter(t, b, r.Sale, "gone", nil) // enters, then closes the tab
	present := enter(t, a, r.Sale, "present", nil)
	if gone.Position != 1 || present.Position != 2 {
		t.Fatalf("entries: gone %s, present %s", gone.Raw, present.Raw)
	}
	// The present waiter polls (at least as often as told), through both gateways in turn;
	// gone does not. Past
	// his last answer's refresh_s and the grace, gone is absent (the fast client still holds
	// the unit's admission: nobody is passed or admitted meanwhile).
	turn := 0
	pollAsTold := func() reply {
		gw := a
		if turn++; turn%2 == 0 {
			gw = b
		}
		p := poll(t, gw, r.Sale, "present", present.Ticket)
		if p.Status != http.StatusOK || (p.State != "waiting" && p.State != "admitted") {
			t.Fatalf("present: %s, want waiting or admitted", p.Raw)
		}
		time.Sleep(500 * time.Millisecond) // more often than refresh_s asks: still present
		return p
	}
	goneUntil := rdb.ZScore(ctx, contract.RoomSeenKey(r.Sale), "gone").Val()
	for float64(redisNow(t, rdb).UnixMilli()) <= goneUntil {
		pollAsTold()
	}
	// The fast client polls as fast as it can through gateway B until the throttle bans it.
	banned := false
	for i := 0; i < 50 && !banned; i++ {
		banned = poll(t, b, r.Sale, "fast", fast.Ticket).Status == http.StatusTooManyRequests &&
			rdb.HExists(ctx, contract.ThrottleBanKey("user", throttlecore.SafeKey("fast")), "banned_until").Val()
	}
	if !banned {
		t.Fatalf("the throttle never banned the fast client (no %s)", contract.ThrottleBanKey("user", throttlecore.SafeKey("fast")))
	}
	// He is admitted: the banned client's admission ended, and gone's place was passed.
	start := time.Now()
	for pollAsTold().State != "admitted" {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("present still waiting after %v, want admitted well before a session lapses", time.Since(start))
		}
	}
	if n := rdb.ZScore(ctx, contract.RoomLiveKey(r.Sale), "fast").Err(); n == nil {
		t.Fatal("the banned client still holds a live admission")
	}
	if rdb.ZScore(ctx, contract.RoomLiveKey(r.Sale), "gone").Err() == nil {
		t.Fatal("gone, absent, was admitted")
	}
	// The evidence: fast admitted then revoked, gone passed, present admitted (the holds, h:,
	// while fast's admission held the unit, left out).
	var kinds []string
	for _, e := range rdb.LRange(ctx, contract.RoomLogKey(r.Sale), 0, -1).Val() {
		if p := strings.Split(e, ":"); p[0] != "h" {
			kinds = append(kinds, p[0]+":"+p[len(p)-1])
		}
	}
	if got := strings.Join(kinds, " "); got != "a:fast r:fast s:gone a:present" {
		t.Fatalf("the room's log: %s, want a:fast r:fast s:gone a:present", got)
	}
	checks, err := invariants.Room(ctx, rdb, r.Sale, nil, invariants.RoomOptions{RequireAdmission: true})
	if err != nil || len(checks) != 4 {
		t.Fatalf("invariants.Room: %d checks, %v", len(checks), err)
	}
	for _, c := range checks {
		if c.Verdict != invariants.Pass {
			t.Errorf("invariant %d: %s %v", c.N, c.Detail, c.Problems)
		}
	}
}

// Conversion-aware admission, through two gateways with the default settings: the
// last unit's admission goes to a waiter who is there (he polls as told) but never takes a
// token, as a client the throttle refuses on the token route. Once the claim window after his
// presence deadline is over he is judged a no-show: his admission stays live (he could still
// buy until the 10-minute session ends), but the present waiter behind him is admitted within
// seconds, takes a token and buys the unit. Invariants 6-9 hold on the log, with the hold (h:)
// and the no-show (n:) the script logged; with claim_window off the buyer would wait the whole
// session (TestRoomPassesANoShowsCapacityOnWithinTheClaimWindow, aware=false).
var plainTwoGateway = gateway(gatewayConfig{Two: true})

func TestTheLastUnitIsNotHeldASessionByAWaiterWhoTakesNoToken(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	a, b := plainTwoGateway.Two(t)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "600000"})
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.RoomClaimKey(r.Sale), contract.RoomIdleKey(r.Sale), contract.RoomLogKey(r.Sale))
	})

	noshow := enter(t, a, r.Sale, "noshow", nil)
	if noshow.State != "admitted" {
		t.Fatalf("noshow: %s, want admitted (the one unit)", noshow.Raw)
	}
	buyer := enter(t, b, r.Sale, "buyer", nil)
	if buyer.State != "waiting" || buyer.Position != 1 {
		t.Fatalf("buyer: %s, want waiting at 1", buyer.Raw)
	}
	start := time.Now()
	for turn := 0; ; turn++ {
		gw := []string{a, b}[turn%2]
		if p := poll(t, gw, r.Sale, "noshow", noshow.Ticket); p.State != "admitted" {
			t.Fatalf("noshow: %s, want admitted for his whole session", p.Raw)
		}
		p := poll(t, gw, r.Sale, "buyer", buyer.Ticket)
		if p.State == "admitted" {
			break
		}
		if p.State != "waiting" {
			t.Fatalf("buyer: %s, want waiting or admitted", p.Raw)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("buyer still waiting after %v: the no-show held the unit", time.Since(start))
		}
		time.Sleep(300 * time.Millisecond)
	}
	if rdb.ZScore(ctx, contract.RoomLiveKey(r.Sale), "noshow").Err() != nil {
		t.Fatal("the no-show's admission ended: it stays live until the session (he may still buy)")
	}
	tok := do(t, http.MethodPost, a+"/seckill/"+r.Sale+"/token", "buyer", nil)
	if tok.Status != http.StatusOK {
		t.Fatalf("token: %d %s", tok.Status, tok.Raw)
	}
	if got := do(t, http.MethodPost, a+"/seckill/"+r.Sale+"/buy", "buyer", map[string]string{"X-Seckill-Token": tok.Token}); got.Status != http.StatusAccepted {
		t.Fatalf("buy: %d %s", got.Status, got.Raw)
	}
	var kinds []string
	for _, e := range rdb.LRange(ctx, contract.RoomLogKey(r.Sale), 0, -1).Val() {
		p := strings.Split(e, ":")
		u := p[len(p)-1]
		if p[0] == "t" {
			u = p[3]
		}
		kinds = append(kinds, p[0]+":"+u)
	}
	if got := strings.Join(kinds, " "); got != "a:noshow h:buyer n:noshow a:buyer t:buyer" {
		t.Fatalf("the room's log: %s, want a:noshow h:buyer n:noshow a:buyer t:buyer", got)
	}
	checks, err := invariants.Room(ctx, rdb, r.Sale, []string{"buyer"}, invariants.RoomOptions{RequireAdmission: true})
	if err != nil || len(checks) != 4 {
		t.Fatalf("invariants.Room: %d checks, %v", len(checks), err)
	}
	for _, c := range checks {
		if c.Verdict != invariants.Pass {
			t.Errorf("invariant %d: %s %v", c.N, c.Detail, c.Problems)
		}
	}
}
