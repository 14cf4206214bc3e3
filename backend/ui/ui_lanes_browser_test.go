//go:build integration

package ui_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// roomVisit runs room_queue.lua on a sale with lanes as the gateway's room does
// (caddymodule/room/core's RedisStore.Visit): op enter (into lane, spending the code when
// given; no admission step) or tick (the admission step). lanes is the room's lanes in order.
func roomVisit(t *testing.T, e *servicetest.Env, sale string, lanes []admin.LaneSpec, op, user, lane, code string) string {
	t.Helper()
	keys := []string{contract.MetaKey(sale), contract.RoomKey(sale), contract.RoomQueueKey(sale), contract.RoomLiveKey(sale), contract.RoomSpentKey(sale),
		contract.BuyersKey(sale), contract.RoomLogKey(sale), contract.RoomSeenKey(sale), contract.RoomAwayKey(sale), contract.RoomBackKey(sale),
		contract.TokensKey(sale), contract.RoomClaimKey(sale), contract.RoomIdleKey(sale), contract.RoomKeysKey(sale), contract.RoomFlaggedKey(sale),
		contract.RoomCodesKey(sale), contract.RoomCodesUsedKey(sale)}
	for _, l := range lanes {
		if l.Kind == admin.LanePublic {
			keys = append(keys, contract.RoomQueueKey(sale), contract.RoomAwayKey(sale), contract.RoomBackKey(sale))
			continue
		}
		q := contract.RoomLaneQueueKey(sale, l.Name)
		keys = append(keys, q, q+":away", q+":back")
	}
	// A member: 32 bytes of rank, 16 of entry id, the user (after the start the queue's order is
	// the arrival order, which the rank does not change).
	rank, id := sha256.Sum256([]byte("rank:"+user)), sha256.Sum256([]byte("entry:"+user))
	member := string(rank[:]) + string(id[:16]) + user
	admit := "0"
	if op == "tick" {
		member, admit = "", "1"
	}
	args := []any{op, member, "100", "1", 600000, 3600000, "", 0, "", "", admit, "", "", ""}
	if op == "enter" {
		hash := ""
		if code != "" {
			hash = sales.InvitationCodeHash(code)
		}
		args = append(args, "", "", lane, hash)
	}
	res, err := lua.RoomQueue.Run(context.Background(), e.Redis, keys, args...).Slice()
	if err != nil {
		t.Fatalf("room_queue %s %s: %v", op, user, err)
	}
	return res[0].(string)
}

// The cockpit shows each lane of a room sale with lanes, in Chromium: a sale created with a
// members lane (a claim), an invitation lane and a public lane, entered through room_queue.lua
// as the gateways enter it (invitation codes issued by the backend, two of three spent), then
// admitted by one admission step. Each lane's row says its kind, its share, its waiters, its
// admissions and entries as Redis holds them, and the invitation lane its codes issued and
// used; a sale without lanes shows no lane panel.
// Serial (no t.Parallel): it sets the environment the cockpit reads (t.Setenv).
func TestCockpitShowsEachLaneOfARoomSale(t *testing.T) {
	e := servicetest.New(t)
	t.Setenv("SECKILL_GATEWAY_METRICS", "")
	srv := e.ControlServer()
	ctx := context.Background()
	sale := testenv.ID("l")
	rate := 100.0
	lanes := []admin.LaneSpec{{Name: "members", Kind: admin.LaneClaim, Claim: "member", Share: 0.5},
		{Name: "invited", Kind: admin.LaneInvitation, Share: 0.25}, {Name: "public", Kind: admin.LanePublic, Share: 0.25}}
	now := time.Now()
	if _, err := e.Svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: sale, Stock: 2, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		PayWithin: "15m", Room: &admin.RoomSpec{Rate: &rate, Lanes: lanes}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keys, _ := e.Redis.Keys(context.Background(), "seckill:"+contract.SaleTag(sale)+"*").Result()
		if len(keys) > 0 {
			e.Redis.Del(context.Background(), keys...)
		}
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	if _, err := e.Svc.Sales.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	inv, err := e.Svc.Sales.IssueInvitations(ctx, sale, admin.InvitationRequest{Count: 3, Uses: 1})
	if err != nil || inv.Lane != "invited" || len(inv.Codes) != 3 {
		t.Fatalf("invitations: %+v %v", inv, err)
	}
	entries := map[string]int{"members": 3, "invited": 2, "public": 2}
	for lane, n := range entries {
		for i := range n {
			code := ""
			if lane == "invited" {
				code = inv.Codes[i]
			}
			if got := roomVisit(t, e, sale, lanes, "enter", fmt.Sprintf("%s%d", lane, i), lane, code); got != "waiting" {
				t.Fatalf("%s%d enters: %s", lane, i, got)
			}
		}
	}
	roomVisit(t, e, sale, lanes, "tick", "", "", "")
	plain := e.Sale(3)

	// What Redis holds, lane by lane: the page must show the same.
	h := e.Redis.HGetAll(ctx, contract.RoomKey(sale)).Val()
	counts := sales.LaneCounts(h)
	var admitted int64
	for _, l := range lanes {
		c := counts[l.Name]
		if c["entries"] != int64(entries[l.Name]) {
			t.Fatalf("lane %s: %d entries in Redis, want %d", l.Name, c["entries"], entries[l.Name])
		}
		admitted += c["admitted"]
	}
	// Two units, oversubscribe 1: the step admits two, across the lanes.
	if total, _ := strconv.ParseInt(h["admitted"], 10, 64); admitted != 2 || total != 2 {
		t.Fatalf("%d admitted over the lanes (%d in the room), want 2: %v", admitted, total, counts)
	}

	b := browser(t)
	signIn(t, b, srv.URL, sale)
	card := `#sale-` + sale
	waitJS(t, b, "the lane panel", fmt.Sprintf(`!document.querySelector(%q).hidden`, card+` [data-l="panel"]`))
	waitJS(t, b, "the lane mode", textIs(card+` [data-l="mode"]`, "each lane its share of the rate"))
	rows := fmt.Sprintf(`[...document.querySelectorAll('%s [data-l="rows"] tr')].map(r => r.dataset.lane + ":" + [...r.cells].slice(1).map(c => c.textContent).join("|")).join(" / ")`, card)
	var want []string
	for _, l := range lanes {
		c := counts[l.Name]
		kind, share, codes := l.Kind, fmt.Sprintf("%g %%", l.Share*100), "–"
		if l.Claim != "" {
			kind += " (" + l.Claim + ")"
		}
		if l.Kind == admin.LaneInvitation {
			codes = "3 issued · 2 used"
		}
		want = append(want, fmt.Sprintf("%s:%s|%s|%d|%d|%d|%s", l.Name, kind, share, c["entries"]-c["admitted"], c["admitted"], c["entries"], codes))
	}
	waitJS(t, b, "each lane's row", fmt.Sprintf(`%s === %q`, rows, strings.Join(want, " / ")))
	waitJS(t, b, "no lane panel on a sale without lanes", fmt.Sprintf(`document.querySelector('#sale-%s') && document.querySelector('#sale-%s [data-l="panel"]').hidden`, plain, plain))

	// A new entry in the public lane moves its row on the next frame.
	if got := roomVisit(t, e, sale, lanes, "enter", "late", "public", ""); got != "waiting" {
		t.Fatalf("late enters: %s", got)
	}
	pub := counts["public"]
	waitJS(t, b, "the public lane's new waiter", textIs(card+` [data-lane="public"] [data-c="waiting"]`, strconv.FormatInt(pub["entries"]-pub["admitted"]+1, 10)))
	waitJS(t, b, "the public lane's new entry", textIs(card+` [data-lane="public"] [data-c="entries"]`, strconv.FormatInt(pub["entries"]+1, 10)))
}
