//go:build integration

package room

import (
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/internal/testenv"
)

func leave(t testing.TB, base, sale, user, ticket string) reply {
	t.Helper()
	return do(t, http.MethodDelete, base+"/seckill/"+sale+"/queue", user, map[string]string{sealed.HeaderTicket: ticket})
}

// DELETE /queue: the place is given up, the waiters behind move up, a retried
// DELETE answers the same, the ticket then holds no place, entering again is a new place at
// the back, an admitted place cannot leave, and a missing ticket is refused.
// The polls ask Redis (front_window makes every poll near the front do so), which knows of the
// leave at once; from memory a place behind it is told its position as the ticket placed it, a
// little behind the truth (docs/room.md, "Answers from memory").
var frontGateway = gateway(gatewayConfig{Room: map[string]any{"front_window": "10s"}})

func TestLeavingGivesThePlaceUpAndTheWaitersBehindMoveUp(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := frontGateway.Base(t)
	// One live admission at a time: first is admitted, the others wait.
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	first := enter(t, gw, r.Sale, "first", nil)
	second := enter(t, gw, r.Sale, "second", nil)
	third := enter(t, gw, r.Sale, "third", nil)
	if first.State != "admitted" || second.Position != 1 || third.Position != 2 {
		t.Fatalf("entries: %s / %s / %s", first.Raw, second.Raw, third.Raw)
	}
	if got := leave(t, gw, r.Sale, "second", second.Ticket); got.Status != http.StatusOK || got.State != "left" {
		t.Fatalf("second leaves: %d %s", got.Status, got.Raw)
	}
	if got := poll(t, gw, r.Sale, "third", third.Ticket); got.State != "waiting" || got.Position != 1 {
		t.Fatalf("third after second left: %s, want waiting at 1", got.Raw)
	}
	if got := leave(t, gw, r.Sale, "second", second.Ticket); got.Status != http.StatusOK || got.State != "left" {
		t.Fatalf("second leaves again: %d %s, want 200 left", got.Status, got.Raw)
	}
	if got := poll(t, gw, r.Sale, "second", second.Ticket); got.Status != http.StatusForbidden || got.Code != core.CodeInvalidTicket {
		t.Fatalf("second polls after leaving: %d %s, want 403 invalid_ticket", got.Status, got.Raw)
	}
	again := enter(t, gw, r.Sale, "second", nil)
	if again.State != "waiting" || again.Position != 2 {
		t.Fatalf("second enters again: %s, want a new place behind third (2)", again.Raw)
	}
	if got := leave(t, gw, r.Sale, "first", first.Ticket); got.Status != http.StatusConflict || got.Code != core.CodeNotWaiting {
		t.Fatalf("the admitted first leaves: %d %s, want 409 not_waiting", got.Status, got.Raw)
	}
	if got := leave(t, gw, r.Sale, "third", ""); got.Status != http.StatusForbidden || got.Code != core.CodeInvalidTicket {
		t.Fatalf("leaving without a ticket: %d %s, want 403 invalid_ticket", got.Status, got.Raw)
	}
	if got := leave(t, gw, r.Sale, "third", second.Ticket); got.Status != http.StatusForbidden || got.Code != core.CodeInvalidTicket {
		t.Fatalf("leaving with another user's ticket: %d %s, want 403 invalid_ticket", got.Status, got.Raw)
	}
	if got := poll(t, gw, r.Sale, "third", third.Ticket); got.State != "waiting" || got.Position != 1 {
		t.Fatalf("third after the refused leaves: %s, want still waiting at 1", got.Raw)
	}
}

// A closed tab enters again while its place is valid: the same place, the same entry id, not
// a new one at the back.
func TestEnteringAgainWhileThePlaceIsValidReturnsTheSamePlace(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	enter(t, gw, r.Sale, "first", nil)
	alice := enter(t, gw, r.Sale, "alice", nil)
	enter(t, gw, r.Sale, "bob", nil)
	again := enter(t, gw, r.Sale, "alice", nil)
	if again.State != "waiting" || again.Position != alice.Position || again.EntryID != alice.EntryID || alice.EntryID == "" {
		t.Fatalf("alice entered at %s, again at %s: want the same place", alice.Raw, again.Raw)
	}
}

// estimated_wait_range_s brackets estimated_wait_s for a waiter.
//
// Serial: its estimate is the room's before any measured pace, which starts 2 s after the
// start.
func TestAWaiterIsToldARangeAroundTheEstimatedWait(t *testing.T) {
	rdb := testenv.Redis(t)
	gw := plainGateway.Base(t)
	// 1 unit x 1, session 10 s: the floor is one admission per 10 s, the rate 1 per second.
	// The sale starts as the entries come (a pace is measured from 2 s after the start).
	r := newRoom(t, rdb, 1, -time.Millisecond, time.Hour, roomArgs{Rate: "1", Oversubscribe: "1", SessionMS: "10000"})
	enter(t, gw, r.Sale, "first", nil)
	for _, u := range []string{"u1", "u2", "u3"} {
		enter(t, gw, r.Sale, u, nil)
	}
	got := enter(t, gw, r.Sale, "u4", nil)
	if got.State != "waiting" || len(got.EstimatedWaitRangeS) != 2 {
		t.Fatalf("u4: %s, want waiting with a range", got.Raw)
	}
	lo, hi := got.EstimatedWaitRangeS[0], got.EstimatedWaitRangeS[1]
	if lo > got.EstimatedWaitS || got.EstimatedWaitS > hi || lo < 3 || hi < 30 {
		t.Fatalf("u4 (3 ahead, rate 1/s, floor 0.1/s): estimate %d in [%d, %d], want lo >= 3, hi >= 30", got.EstimatedWaitS, lo, hi)
	}
}
