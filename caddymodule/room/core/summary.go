package core

import (
	"context"
	"math"
	"sync"
	"time"
)

// A gateway's summary of a sale's room: most waiters stand far from the front, and
// what they are told (position, ahead, the estimate, the room's state) needs only the room's
// counters, not their own place in Redis. Each gateway looks at the room at most once per
// summary_interval per sale (one room_queue.lua tick: it admits like a poll and returns the
// counters), and answers from it every waiter whose placed ticket stands more than the front
// window from the cursor, and every pre-queue waiter before the start. Only waiters near the
// front, and waiters without a placed ticket, reach Redis on every poll.

// Summary is the room as the last tick saw it.
type Summary struct {
	Outcome  Outcome   // BeforeStart, Open, SoldOut, Paused, Ended
	Now      time.Time // Redis time of the tick
	Read     time.Time // this gateway's time of the tick
	Stock    int64
	Depth    int64 // places not yet admitted (before the start: the pre-queue's size)
	Admitted int64 // the room's admissions so far (the pace)
	Cursor   int64 // places the admission step walked past
	Starts   time.Time
}

// MaxPresent bounds the users a view remembers between two ticks: beyond it presence is
// recorded at the next poll that reaches Redis or the next tick. 4096 users per interval is
// 8 192 far polls a second per sale per gateway at the default interval.
const MaxPresent = 4096

// View is what a gateway keeps of a room across cache refreshes: the admission pace,
// the summary with the users seen since the last tick, and the recent admission decisions
// (decided.go). Its memory is bounded: the pace's 8 samples, one summary, at most MaxPresent
// user ids seen and MaxDecided decided.
type View struct {
	Pace AdmissionPace

	mu      sync.Mutex
	admit   time.Time // when this gateway last ran the admission step for the room
	sum     Summary
	has     bool
	ticking bool
	present map[string]time.Duration // user -> how long he counts as present from the tick
	dec     decisions
}

// NewView is an empty view.
func NewView() *View { return &View{present: make(map[string]time.Duration)} }

// Decided is how many of the room's decisions the view has read: the next tick's
// Visit.Decided.
func (v *View) Decided() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.dec.count
}

// decisionOf is the user's latest decision in memory; ok false when there is none or the room's
// waitlist runs.
func (v *View) decisionOf(user string) (decision, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dec.waitlist {
		return decision{}, false
	}
	d, ok := v.dec.users[user]
	return d, ok
}

// ClaimAdmission reports whether the call about to be made should run the admission step:
// true at most once per every (admission does not ride on every poll; the script
// still decides, so it stays exact across gateways).
func (v *View) ClaimAdmission(now time.Time, every time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.admit.IsZero() && now.Sub(v.admit) < every && !now.Before(v.admit) {
		return false
	}
	v.admit = now
	return true
}

// Seen records a user answered from memory, present for d from the next tick (the longest
// of his answers since the last tick).
func (v *View) Seen(user string, d time.Duration) {
	v.mu.Lock()
	if old, ok := v.present[user]; ok || len(v.present) < MaxPresent {
		v.present[user] = max(old, d)
	}
	v.mu.Unlock()
}

// Last is the summary as it stands, without a tick.
func (v *View) Last() (Summary, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sum, v.has
}

// Current returns a summary at most interval old, ticking when it is older: one caller ticks,
// the others meanwhile keep the last one while it is at most twice the interval old, else they
// go to Redis themselves (ok false).
func (v *View) Current(ctx context.Context, now time.Time, interval time.Duration, tick func(ctx context.Context, present []Seen) (Reply, error)) (Summary, bool) {
	v.mu.Lock()
	if v.has && now.Sub(v.sum.Read) < interval {
		s := v.sum
		v.mu.Unlock()
		return s, true
	}
	if v.ticking {
		s, ok := v.sum, v.has && now.Sub(v.sum.Read) < 2*interval
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
			if old, ok := v.present[u.User]; ok || len(v.present) < MaxPresent {
				v.present[u.User] = max(old, u.For)
			}
		}
		return v.sum, false
	}
	switch rep.Outcome {
	case BeforeStart, Open, SoldOut, Paused, Ended:
	default:
		v.has = false
		return Summary{}, false
	}
	if rep.Decisions != nil {
		// Read in the same call as the cursor: every place inside it is decided in memory, or
		// older than the memory.
		v.dec.apply(rep.Decisions)
	}
	v.sum = Summary{Outcome: rep.Outcome, Now: rep.Now, Read: now, Stock: rep.Stock, Depth: rep.Depth,
		Admitted: rep.Admitted, Cursor: rep.Cursor, Starts: rep.Starts}
	v.has = true
	v.Pace.Observe(rep.Admitted, rep.Now)
	return v.sum, true
}

// FrontPlaces is how many places from the cursor count as near the front: front_window's worth
// of admissions at the room's rate, at least one. Within it a waiter may be admitted before the
// next tick, so his poll asks Redis.
func FrontPlaces(rate float64, window time.Duration) int64 {
	return max(1, int64(math.Ceil(rate*window.Seconds())))
}
