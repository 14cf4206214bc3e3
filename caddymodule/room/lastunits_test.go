package room

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The last unit goes to a waiter who can use it (issue 35), with the room's default presence
// through two gateways behind the demo's kind of throttle: the admission held by a client the
// throttle then bans is passed on at once (ban_zones), and a waiter who stopped polling is
// passed once the refresh_s of his last answer and the grace are over, so the present waiter
// behind them is admitted long before any session could lapse (10 minutes here). Invariants
// 6-9 hold on the log the scripts kept, including the revocation (r:) and the pass (s:).
func TestTheLastUnitGoesToAPresentWaiterNotToAnAbsentOrBannedOne(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.Port2 = testenv.FreePort(t)
	cfg.Room = map[string]any{"ban_zones": []string{"user"}} // presence: the default
	cfg.Throttle = map[string]any{"handler": "seckill_throttle", "zones": []any{map[string]any{
		"name": "user", "key": "{http.request.header.X-User-ID}", "window": "1s", "limit": 4,
		"ban": map[string]any{"after": 1, "within": "1m", "for": "1m"},
	}}}
	a := startCaddy(t, cfg)
	b := fmt.Sprintf("http://127.0.0.1:%d", cfg.Port2)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "600000"})

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
	goneUntil := rdb.ZScore(ctx, SeenKey(r.Sale), "gone").Val()
	for float64(redisNow(t, rdb).UnixMilli()) <= goneUntil {
		pollAsTold()
	}
	// The fast client polls as fast as it can through gateway B until the throttle bans it.
	banned := false
	for i := 0; i < 50 && !banned; i++ {
		banned = poll(t, b, r.Sale, "fast", fast.Ticket).Status == http.StatusTooManyRequests &&
			rdb.HExists(ctx, BanKey("user", "fast"), "banned_until").Val()
	}
	if !banned {
		t.Fatalf("the throttle never banned the fast client (no %s)", BanKey("user", "fast"))
	}
	// He is admitted: the banned client's admission ended, and gone's place was passed.
	start := time.Now()
	for pollAsTold().State != "admitted" {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("present still waiting after %v, want admitted well before a session lapses", time.Since(start))
		}
	}
	if n := rdb.ZScore(ctx, LiveKey(r.Sale), "fast").Err(); n == nil {
		t.Fatal("the banned client still holds a live admission")
	}
	if rdb.ZScore(ctx, LiveKey(r.Sale), "gone").Err() == nil {
		t.Fatal("gone, absent, was admitted")
	}
	// The evidence: fast admitted then revoked, gone passed, present admitted.
	var kinds []string
	for _, e := range rdb.LRange(ctx, contract.RoomLogKey(r.Sale), 0, -1).Val() {
		p := strings.Split(e, ":")
		kinds = append(kinds, p[0]+":"+p[len(p)-1])
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
