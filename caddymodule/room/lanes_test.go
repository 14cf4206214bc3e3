//go:build integration

package room

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// laneShares is the fairness test's room: members by a claim at half the rate, invitations
// at a fifth, the public the rest.
const laneShares = "share,members:claim:0.5:member,invited:invitation:0.2:,public:public:0.3:"

// Fair across lanes, exact across gateways: two gateways, a members lane at 50 % of the rate
// (chosen by the user's claim through lane_claims), an invitation lane at 20 % whose codes
// are capped at one use each, and a public lane, with fast clients in each entering the
// pre-queue through both gateways. Every unit is sold, none twice; each lane admits in its
// own pre-queue's order (the seed's ranking of its entries); the lanes' shares of the
// admissions are within 5 % of the configured ones; a code used once is refused
// invitation_exhausted on the other gateway, an unknown one invitation_unknown.
// The demo's way to carry claims (a real site takes them from the verified identity), and a
// generous token timeout: -race on two busy cores.
var lanesGateway = gateway(gatewayConfig{Two: true, Room: map[string]any{"lane_claims": "{http.request.header.X-Test-Claims}"},
	Token: map[string]any{"timeout": "10s"}})

// Serial: its 120 fast clients must be answered within the handlers' timeouts on two cores.
func TestLanesAreFairAcrossLanesAndExactAcrossTwoGateways(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	a, b := lanesGateway.Two(t)
	const units = 100
	counts := map[string]int{"members": 60, "invited": 24, "public": 36}
	shares := map[string]float64{"members": 0.5, "invited": 0.2, "public": 0.3}
	// The start is far: every entry is in the pre-queue however loaded the machine, and the
	// test moves the start to now once they are (as a preheat with a new window would).
	r := newRoom(t, rdb, units, 10*time.Minute, time.Hour, roomArgs{Rate: "25", Oversubscribe: "1", SessionMS: "600000", Lanes: laneShares})
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.RoomLogKey(r.Sale), contract.RoomSeenKey(r.Sale), contract.RoomAwayKey(r.Sale), contract.RoomBackKey(r.Sale),
			contract.RoomClaimKey(r.Sale), contract.RoomIdleKey(r.Sale), contract.RoomCodesKey(r.Sale), contract.RoomCodesUsedKey(r.Sale),
			contract.RoomLaneQueueKey(r.Sale, "members"), contract.RoomLaneQueueKey(r.Sale, "invited"))
	})
	type client struct {
		user, lane string
		headers    map[string]string
		gw         string
		ticket     string
	}
	var clients []*client
	for _, lane := range []string{"members", "invited", "public"} {
		for i := range counts[lane] {
			c := &client{user: fmt.Sprintf("%s%02d", lane, i), lane: lane, headers: map[string]string{}}
			switch lane {
			case "members":
				c.headers["X-Test-Claims"] = "member"
			case "invited":
				code := fmt.Sprintf("CODE-%04d", i)
				if err := rdb.HSet(ctx, contract.RoomCodesKey(r.Sale), core.CodeHash(code), 1).Err(); err != nil {
					t.Fatal(err)
				}
				c.headers[HeaderInvitation] = code
			}
			c.gw = a
			if len(clients)%2 == 1 {
				c.gw = b
			}
			clients = append(clients, c)
		}
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := enter(t, c.gw, r.Sale, c.user, c.headers)
			if got.Status != http.StatusOK || got.State != "waiting" {
				t.Errorf("%s enters: %d %s", c.user, got.Status, got.Raw)
			}
			c.ticket = got.Ticket
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// A code capped at one use, used once already: refused on either gateway, and no place.
	for _, gw := range []string{a, b} {
		if got := enter(t, gw, r.Sale, "thief", map[string]string{HeaderInvitation: "CODE-0000"}); got.Status != http.StatusForbidden || got.Code != contract.CodeInvitationExhausted {
			t.Fatalf("a spent code: %d %s, want 403 invitation_exhausted", got.Status, got.Raw)
		}
	}
	if got := enter(t, b, r.Sale, "guesser", map[string]string{HeaderInvitation: "GUESS-1234"}); got.Status != http.StatusForbidden || got.Code != contract.CodeInvitationUnknown {
		t.Fatalf("an unknown code: %d %s, want 403 invitation_unknown", got.Status, got.Raw)
	}
	for lane, n := range counts {
		key := contract.RoomLaneQueueKey(r.Sale, lane)
		if lane == "public" {
			key = contract.RoomQueueKey(r.Sale)
		}
		if got, _ := rdb.ZCard(ctx, key).Result(); got != int64(n) {
			t.Fatalf("lane %s holds %d places, want %d", lane, got, n)
		}
	}

	starts := redisNow(t, rdb).Add(300 * time.Millisecond)
	rdb.HSet(ctx, contract.MetaKey(r.Sale), "starts_ms", starts.UnixMilli())
	testenv.WaitFor(t, 15*time.Second, "the start", func() bool { return !redisNow(t, rdb).Before(starts) })

	// Fast clients: each polls every 150 ms through alternating gateways and buys at once.
	var mu sync.Mutex
	bought := map[string]int{}
	deadline := time.Now().Add(3 * time.Minute)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gws := []string{a, b}
			for n := i; time.Now().Before(deadline); n++ {
				p := poll(t, gws[n%2], r.Sale, c.user, c.ticket)
				if p.Ticket != "" {
					c.ticket = p.Ticket
				}
				switch {
				case p.Status != http.StatusOK:
					t.Errorf("%s polls: %d %s", c.user, p.Status, p.Raw)
					return
				case p.State == "sold_out" || p.State == "ended":
					return
				case p.State == "admitted":
					tok := do(t, http.MethodPost, a+"/seckill/"+r.Sale+"/token", c.user, nil)
					for tok.Status == http.StatusServiceUnavailable && tok.Code == contract.CodeUnavailable && time.Now().Before(deadline) {
						// The contract's 503: come back (a client does; it holds its admission).
						time.Sleep(200 * time.Millisecond)
						tok = do(t, http.MethodPost, a+"/seckill/"+r.Sale+"/token", c.user, nil)
					}
					if tok.Status != http.StatusOK {
						if tok.Code == contract.CodeSoldOut {
							return
						}
						t.Errorf("%s token: %d %s", c.user, tok.Status, tok.Raw)
						return
					}
					got := do(t, http.MethodPost, a+"/seckill/"+r.Sale+"/buy", c.user, map[string]string{"X-Seckill-Token": tok.Token})
					if got.Status == http.StatusAccepted {
						mu.Lock()
						bought[c.user]++
						mu.Unlock()
					} else if got.Code != contract.CodeSoldOut {
						t.Errorf("%s buys: %d %s", c.user, got.Status, got.Raw)
					}
					return
				}
				time.Sleep(150 * time.Millisecond)
			}
			t.Errorf("%s: no answer but waiting until the deadline", c.user)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Every unit sold, none twice.
	if len(bought) != units {
		t.Fatalf("%d buyers, want %d (every unit sold)", len(bought), units)
	}
	for u, n := range bought {
		if n != 1 {
			t.Fatalf("%s bought %d times", u, n)
		}
	}
	if n, _ := rdb.HLen(ctx, contract.BuyersKey(r.Sale)).Result(); n != units {
		t.Fatalf("the buyers hash holds %d, want %d", n, units)
	}
	if s, _ := rdb.HGet(ctx, contract.MetaKey(r.Sale), "stock").Int(); s != 0 {
		t.Fatalf("stock left %d, want 0", s)
	}
	// Each lane's admissions in its order: the walk of each lane's queue, as the offline check
	// replays it (an admission is its lane's next place, or a passed waiter's return).
	laneOf := map[string]string{}
	queues := map[string][]string{}
	for lane := range counts {
		key := contract.RoomLaneQueueKey(r.Sale, lane)
		if lane == "public" {
			key = contract.RoomQueueKey(r.Sale)
		}
		ms, err := rdb.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			u := m[core.RankLen+core.EntryIDLen:]
			laneOf[u] = lane
			queues[lane] = append(queues[lane], u)
		}
	}
	log, err := rdb.LRange(ctx, contract.RoomLogKey(r.Sale), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	walked := map[string]int{}
	passed := map[string]bool{}
	admitted := map[string]int{}
	total := 0
	for _, e := range log {
		p := strings.SplitN(e, ":", 4)
		if len(p) != 4 || (p[0] != "a" && p[0] != "s") {
			continue
		}
		u := p[3]
		lane := laneOf[u]
		q := queues[lane]
		if p[0] == "s" {
			if walked[lane] >= len(q) || q[walked[lane]] != u {
				t.Fatalf("%s passed out of lane %s's order", u, lane)
			}
			walked[lane]++
			passed[u] = true
			continue
		}
		switch {
		case passed[u]:
			delete(passed, u)
		case walked[lane] < len(q) && q[walked[lane]] == u:
			walked[lane]++
		default:
			t.Fatalf("admission of %s is not lane %s's next place", u, lane)
		}
		admitted[lane]++
		total++
	}
	if total != units {
		t.Fatalf("%d admissions, want %d (one per unit)", total, units)
	}
	t.Logf("admissions by lane: %v of %d", admitted, total)
	for lane, share := range shares {
		if f := float64(admitted[lane]) / float64(total); math.Abs(f-share) > 0.05*share {
			t.Errorf("lane %s: %d of %d admissions (%.3f), want %.2f within 5 %%", lane, admitted[lane], total, f, share)
		}
		if got, _ := rdb.HGet(ctx, contract.RoomKey(r.Sale), "lane:"+lane+":admitted").Int(); got != admitted[lane] {
			t.Errorf("lane %s's counter says %d admitted, its log %d", lane, got, admitted[lane])
		}
	}
}
