package room

import (
	"context"
	"time"

	"github.com/seckilledge/seckill/caddymodule/room/core"
)

// presenceGrace is how long past the refresh_s of his last answer a waiter still counts as
// present: his poll's way to the gateway, and the wait for the tick that records an
// answer given from memory (up to two summary intervals: one to age the summary, one for a
// tick in flight). A second of slack for the network and a busy phone.
func (h *Room) presenceGrace() time.Duration {
	return 2*time.Duration(h.SummaryInterval) + time.Second
}

// claimWindow is how long past his presence deadline an admitted waiter may take before his
// token (0: off): by that deadline he has polled, and his answer says admitted at most two
// summary intervals later (one to age the summary, one for a tick in flight); two seconds
// more for the page's token round trip on a slow phone.
func (h *Room) claimWindow() time.Duration {
	switch {
	case h.ClaimWindow < 0:
		return 0
	case h.ClaimWindow > 0:
		return time.Duration(h.ClaimWindow)
	}
	return 2*time.Duration(h.SummaryInterval) + 2*time.Second
}

// presenceFor is how long a waiter told to come back in told counts as present (the script's
// ARGV[12]): told plus the grace by default; the presence_window when one is set; 0 with
// presence_window off (everyone admitted in turn).
func (h *Room) presenceFor(told time.Duration) time.Duration {
	switch {
	case h.PresenceWindow < 0:
		return 0
	case h.PresenceWindow > 0:
		return time.Duration(h.PresenceWindow)
	}
	return told + h.presenceGrace()
}

// presenceAt is presenceFor with the pre-queue's rule: before the start a waiter is told the
// start as his wait, so he counts as present at least until the start plus the shortest
// refresh (and the grace), whatever refresh_s he was told. Without it, a waiter who entered
// the pre-queue and came back, as told, at the start was passed as absent by the first steps,
// and the units went to whoever happened to poll last instead of down the permutation.
func (h *Room) presenceAt(c *cachedRoom, told time.Duration, now time.Time) time.Duration {
	if now.Before(c.room.Starts) {
		told = max(told, c.room.Starts.Sub(now)+h.refresh.Min)
	}
	return h.presenceFor(told)
}

// toldFor is the refresh_s this gateway expects to tell a waiter whose poll (index: his
// placed ticket's queue index, -1 without one) or entry goes to Redis: from the summary (the
// cursor only moves forward, so the summary's ahead is at least the real one), else the
// shortest refresh. Redis records him present for toldFor plus the grace, and the answer's
// refresh_s is capped at it (capRefresh): a waiter who does as he is told is never passed
// as absent.
func (h *Room) toldFor(c *cachedRoom, index int64, now time.Time) time.Duration {
	if now.Before(c.room.Starts) {
		return time.Duration(h.refresh.After(c.room.Starts.Sub(now))) * time.Second
	}
	s, ok := c.view.Last()
	if !ok || s.Outcome != core.Open {
		return h.refresh.Min
	}
	ahead := s.Depth
	if index >= 0 {
		ahead = max(index-s.Cursor, 0)
	}
	rep := core.Reply{Stock: s.Stock, Admitted: s.Admitted, Now: s.Now.Add(now.Sub(s.Read))}
	return time.Duration(h.refresh.After(c.paceFrom(rep).Wait(ahead).Point)) * time.Second
}

// capRefresh keeps a waiting answer's refresh_s within what Redis recorded his presence for.
func (h *Room) capRefresh(v *core.Verdict, told time.Duration) {
	if h.PresenceWindow != 0 || v.Answer.State != string(core.Waiting) {
		return
	}
	if s := int64(told / time.Second); s >= 1 && v.Answer.RefreshS > s {
		v.Answer.RefreshS = s
	}
}

// fromMemory answers a poll from the room's summary when it can: ok is false when the poll
// must ask Redis (near the front, no placed ticket after the start, no summary).
func (h *Room) fromMemory(ctx context.Context, sale, user string, c *cachedRoom, index int64) (core.Verdict, core.Reply, bool) {
	now := h.now()
	beforeStart := now.Before(c.room.Starts)
	if index < 0 && !beforeStart {
		return core.Verdict{}, core.Reply{}, false
	}
	front := core.FrontPlaces(c.room.Rate, time.Duration(h.FrontWindow))
	// asks tells a place that must ask Redis. By default only a place the
	// summary's cursor has reached: one beyond it is still waiting (the cursor only moves
	// forward, so at most one summary interval late it hears otherwise), and only the poll that
	// finds its place inside the cursor (admitted, passed, lapsed) needs Redis, about once per
	// waiter. With front_window set, every poll within it asks Redis.
	asks := func(s core.Summary) bool {
		if h.FrontWindow > 0 {
			return index-s.Cursor <= front
		}
		return index < s.Cursor
	}
	if s, ok := c.view.Last(); ok && s.Outcome == core.Open && index >= 0 && asks(s) {
		// The cursor only moves forward and the index only back, so a summary of any age
		// that says so is still right. No tick for these polls.
		return core.Verdict{}, core.Reply{}, false
	}
	s, ok := c.view.Current(ctx, now, time.Duration(h.SummaryInterval), func(ctx context.Context, present []core.Seen) (core.Reply, error) {
		rep, err := h.store.Visit(ctx, sale, core.Visit{Tick: true, Present: present, Settings: c.room.Settings,
			Admit: c.view.ClaimAdmission(h.now(), time.Duration(h.AdmitInterval)), Presence: h.presenceFor(0)})
		admissions.Add(float64(rep.AdmittedNow))
		lapsed.Add(float64(rep.LapsedNow))
		if err == nil {
			h.passOnBanned(ctx, sale, c, rep)
		}
		return rep, err
	})
	if !ok {
		return core.Verdict{}, core.Reply{}, false
	}
	// Redis's time now, as far as this gateway can tell: the tick's plus the time since.
	rnow := s.Now.Add(now.Sub(s.Read))
	rep := core.Reply{Outcome: s.Outcome, Now: rnow, Stock: s.Stock, Depth: s.Depth, Starts: c.room.Starts, Admitted: s.Admitted}
	switch {
	case !rnow.Before(c.room.Ends):
		rep.Outcome = core.Ended
	case s.Outcome == core.SoldOut || s.Outcome == core.Paused || s.Outcome == core.Ended:
	case s.Outcome == core.Prequeue && rnow.Before(c.room.Starts):
		// Before the start the order is not drawn: everyone is told the pre-queue's size.
		rep.Outcome, rep.Position, rep.Ahead = core.Waiting, s.Depth, max(s.Depth-1, 0)
	case s.Outcome == core.Open && index >= 0 && !asks(s):
		rep.Outcome = core.Waiting
		rep.Position = index - s.Cursor + 1
		rep.Ahead = rep.Position - 1
	default:
		return core.Verdict{}, core.Reply{}, false
	}
	fromMemoryPolls.Inc()
	v := core.Decide(rep, false, c.paceFrom(rep), h.refresh)
	if rep.Outcome == core.Waiting {
		c.view.Seen(user, h.presenceAt(c, time.Duration(v.Answer.RefreshS)*time.Second, now))
	}
	return v, rep, true
}
