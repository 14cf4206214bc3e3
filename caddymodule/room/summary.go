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
	present map[string]struct{}
}

func newRoomView() *roomView { return &roomView{present: make(map[string]struct{})} }

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

// seen records a user answered from memory, for the next tick.
func (v *roomView) seen(user string) {
	v.mu.Lock()
	if len(v.present) < maxPresent {
		v.present[user] = struct{}{}
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
func (v *roomView) current(ctx context.Context, now time.Time, interval time.Duration, tick func(ctx context.Context, present []string) (Reply, error)) (summary, bool) {
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
	present := make([]string, 0, len(v.present))
	for u := range v.present {
		present = append(present, u)
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
			if len(v.present) < maxPresent {
				v.present[u] = struct{}{}
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

// presence is the window of the presence rule passed to the script (0: none).
func (h *Room) presence() time.Duration {
	return max(time.Duration(h.PresenceWindow), 0)
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
	if s, ok := c.view.last(); ok && s.outcome == Open && index >= 0 && index-s.cursor <= front {
		// Near the front: the cursor only moves forward and the index only back, so a
		// summary of any age that says near is still right. No tick for these polls.
		return Verdict{}, Reply{}, false
	}
	s, ok := c.view.current(ctx, now, time.Duration(h.SummaryInterval), func(ctx context.Context, present []string) (Reply, error) {
		rep, err := h.store.Visit(ctx, sale, Visit{Tick: true, Present: present, Settings: c.room.Settings,
			Admit: c.view.claimAdmission(h.now(), time.Duration(h.AdmitInterval)), Presence: h.presence()})
		admissions.Add(float64(rep.AdmittedNow))
		lapsed.Add(float64(rep.LapsedNow))
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
	case s.outcome == Open && index >= 0 && index-s.cursor > front:
		rep.Outcome = Waiting
		rep.Position = index - s.cursor + 1
		rep.Ahead = rep.Position - 1
	default:
		return Verdict{}, Reply{}, false
	}
	if rep.Outcome == Waiting {
		c.view.seen(user)
	}
	fromMemoryPolls.Inc()
	return Decide(rep, false, c.paceFrom(rep), h.refresh), rep, true
}
