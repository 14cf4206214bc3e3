package room

import (
	"context"
	"math"
	"sync"
	"time"
)

// A gateway's summary of a sale's room (issue 28): most waiters stand far from the front, and
// what they are told (position, ahead, the estimate, the room's state) needs only the room's
// counters, not their own place in Redis. Each gateway looks at the room at most once per
// summary_interval per sale (one room_queue.lua tick: it admits like a poll and returns the
// counters), and answers from it every waiter whose placed ticket stands more than the front
// window from the cursor, and every pre-queue waiter before the start. Only waiters near the
// front, and waiters without a placed ticket, reach Redis on every poll.

// summary is the room as the last tick saw it.
type summary struct {
	outcome  Outcome   // Prequeue, Open, SoldOut, Paused, Ended
	now      time.Time // Redis time of the tick
	read     time.Time // this gateway's time of the tick
	stock    int64
	depth    int64 // places not yet admitted (before the start: the pre-queue's size)
	admitted int64 // the room's admissions so far (the pace)
	cursor   int64 // places the admission step walked past
	starts   time.Time
}

// maxPresent bounds the users a view remembers between two ticks: beyond it presence is
// recorded at the next poll that reaches Redis or the next tick. 4096 users per interval is
// 8 192 far polls a second per sale per gateway at the default interval.
const maxPresent = 4096

// roomView is what a gateway keeps of a room across cache refreshes: the admission pace and
// the summary with the users seen since the last tick. Its memory is fixed: the pace's 8
// samples, one summary, at most maxPresent user ids.
type roomView struct {
	pace admissionPace

	mu      sync.Mutex
	admit   time.Time // when this gateway last ran the admission step for the room
	sum     summary
	has     bool
	ticking bool
	present map[string]time.Duration // user -> how long he counts as present from the tick
}

func newRoomView() *roomView { return &roomView{present: make(map[string]time.Duration)} }

// claimAdmission reports whether the call about to be made should run the admission step:
// true at most once per every (issue 28: admission does not ride on every poll; the script
// still decides, so it stays exact across gateways).
func (v *roomView) claimAdmission(now time.Time, every time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.admit.IsZero() && now.Sub(v.admit) < every && !now.Before(v.admit) {
		return false
	}
	v.admit = now
	return true
}

// seen records a user answered from memory, present for d from the next tick (the longest
// of his answers since the last tick).
func (v *roomView) seen(user string, d time.Duration) {
	v.mu.Lock()
	if old, ok := v.present[user]; ok || len(v.present) < maxPresent {
		v.present[user] = max(old, d)
	}
	v.mu.Unlock()
}

// last is the summary as it stands, without a tick.
func (v *roomView) last() (summary, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sum, v.has
}

// current returns a summary at most interval old, ticking when it is older: one caller ticks,
// the others meanwhile keep the last one while it is at most twice the interval old, else they
// go to Redis themselves (ok false).
func (v *roomView) current(ctx context.Context, now time.Time, interval time.Duration, tick func(ctx context.Context, present []Seen) (Reply, error)) (summary, bool) {
	v.mu.Lock()
	if v.has && now.Sub(v.sum.read) < interval {
		s := v.sum
		v.mu.Unlock()
		return s, true
	}
	if v.ticking {
		s, ok := v.sum, v.has && now.Sub(v.sum.read) < 2*interval
		v.mu.Unlock()
		return s, ok
	}
	v.ticking = true
	present := make([]Seen, 0, len(v.present))
	for u, d := range v.present {
		present = append(present, Seen{User: u, For: d})
	}
	clear(v.present)
	v.mu.Unlock()

	rep, err := tick(ctx, present)

	v.mu.Lock()
	defer v.mu.Unlock()
	v.ticking = false
	if err != nil {
		// The users are put back (within the bound) for the next tick.
		for _, u := range present {
			if old, ok := v.present[u.User]; ok || len(v.present) < maxPresent {
				v.present[u.User] = max(old, u.For)
			}
		}
		return v.sum, false
	}
	switch rep.Outcome {
	case Prequeue, Open, SoldOut, Paused, Ended:
	default:
		v.has = false
		return summary{}, false
	}
	v.sum = summary{outcome: rep.Outcome, now: rep.Now, read: now, stock: rep.Stock, depth: rep.Depth,
		admitted: rep.Admitted, cursor: rep.Cursor, starts: rep.Starts}
	v.has = true
	v.pace.observe(rep.Admitted, rep.Now)
	return v.sum, true
}

// presenceGrace is how long past the refresh_s of his last answer a waiter still counts as
// present (issue 35): his poll's way to the gateway, and the wait for the tick that records an
// answer given from memory (up to two summary intervals: one to age the summary, one for a
// tick in flight). A second of slack for the network and a busy phone.
func (h *Room) presenceGrace() time.Duration {
	return 2*time.Duration(h.SummaryInterval) + time.Second
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
	s, ok := c.view.last()
	if !ok || s.outcome != Open {
		return h.refresh.Min
	}
	ahead := s.depth
	if index >= 0 {
		ahead = max(index-s.cursor, 0)
	}
	rep := Reply{Stock: s.stock, Admitted: s.admitted, Now: s.now.Add(now.Sub(s.read))}
	return time.Duration(h.refresh.After(c.paceFrom(rep).Wait(ahead).Point)) * time.Second
}

// capRefresh keeps a waiting answer's refresh_s within what Redis recorded his presence for.
func (h *Room) capRefresh(v *Verdict, told time.Duration) {
	if h.PresenceWindow != 0 || v.Answer.State != string(Waiting) {
		return
	}
	if s := int64(told / time.Second); s >= 1 && v.Answer.RefreshS > s {
		v.Answer.RefreshS = s
	}
}

// frontPlaces is how many places from the cursor count as near the front: front_window's worth
// of admissions at the room's rate, at least one. Within it a waiter may be admitted before the
// next tick, so his poll asks Redis.
func frontPlaces(rate float64, window time.Duration) int64 {
	return max(1, int64(math.Ceil(rate*window.Seconds())))
}

// fromMemory answers a poll from the room's summary when it can: ok is false when the poll
// must ask Redis (near the front, no placed ticket after the start, no summary).
func (h *Room) fromMemory(ctx context.Context, sale, user string, c *cachedRoom, index int64) (Verdict, Reply, bool) {
	now := h.now()
	beforeStart := now.Before(c.room.Starts)
	if index < 0 && !beforeStart {
		return Verdict{}, Reply{}, false
	}
	front := frontPlaces(c.room.Rate, time.Duration(h.FrontWindow))
	// asks tells a place that must ask Redis. By default (issue 35) only a place the
	// summary's cursor has reached: one beyond it is still waiting (the cursor only moves
	// forward, so at most one summary interval late it hears otherwise), and only the poll that
	// finds its place inside the cursor (admitted, passed, lapsed) needs Redis, about once per
	// waiter. With front_window set, the older rule: every poll within it asks Redis.
	asks := func(s summary) bool {
		if h.FrontWindow > 0 {
			return index-s.cursor <= front
		}
		return index < s.cursor
	}
	if s, ok := c.view.last(); ok && s.outcome == Open && index >= 0 && asks(s) {
		// The cursor only moves forward and the index only back, so a summary of any age
		// that says so is still right. No tick for these polls.
		return Verdict{}, Reply{}, false
	}
	s, ok := c.view.current(ctx, now, time.Duration(h.SummaryInterval), func(ctx context.Context, present []Seen) (Reply, error) {
		rep, err := h.store.Visit(ctx, sale, Visit{Tick: true, Present: present, Settings: c.room.Settings,
			Admit: c.view.claimAdmission(h.now(), time.Duration(h.AdmitInterval)), Presence: h.presenceFor(0)})
		admissions.Add(float64(rep.AdmittedNow))
		lapsed.Add(float64(rep.LapsedNow))
		if err == nil {
			h.passOnBanned(ctx, sale, c, rep)
		}
		return rep, err
	})
	if !ok {
		return Verdict{}, Reply{}, false
	}
	// Redis's time now, as far as this gateway can tell: the tick's plus the time since.
	rnow := s.now.Add(now.Sub(s.read))
	rep := Reply{Outcome: s.outcome, Now: rnow, Stock: s.stock, Depth: s.depth, Starts: c.room.Starts, Admitted: s.admitted}
	switch {
	case !rnow.Before(c.room.Ends):
		rep.Outcome = Ended
	case s.outcome == SoldOut || s.outcome == Paused || s.outcome == Ended:
	case s.outcome == Prequeue && rnow.Before(c.room.Starts):
		// Before the start the order is not drawn: everyone is told the pre-queue's size.
		rep.Outcome, rep.Position, rep.Ahead = Waiting, s.depth, max(s.depth-1, 0)
	case s.outcome == Open && index >= 0 && !asks(s):
		rep.Outcome = Waiting
		rep.Position = index - s.cursor + 1
		rep.Ahead = rep.Position - 1
	default:
		return Verdict{}, Reply{}, false
	}
	fromMemoryPolls.Inc()
	v := Decide(rep, false, c.paceFrom(rep), h.refresh)
	if rep.Outcome == Waiting {
		c.view.seen(user, h.presenceFor(time.Duration(v.Answer.RefreshS)*time.Second))
	}
	return v, rep, true
}
