package core

import (
	"context"
	"time"
)

// Visiting is the part of a visit to Redis (an entry or a poll) that the gateway's knowledge
// sets: the room's settings, whether this call may run the admission step (AdmitInterval) and
// how long the visitor, told to come back in told, counts as present.
func (g *Gateway) Visiting(c *Cached, told time.Duration, now time.Time) Visit {
	return Visit{Settings: c.Room.Settings, Admit: c.View.ClaimAdmission(now, g.AdmitInterval), AdmitLease: g.AdmitInterval,
		Presence: g.presenceAt(c, told, now)}
}

// presenceGrace is how long past the refresh_s of his last answer a waiter still counts as
// present: his poll's way to the gateway, and the wait for the tick that records an
// answer given from memory (up to two summary intervals: one to age the summary, one for a
// tick in flight). A second of slack for the network and a busy phone.
func (g *Gateway) presenceGrace() time.Duration {
	return 2*g.SummaryInterval + time.Second
}

// PresenceFor is how long a waiter told to come back in told counts as present (the script's
// ARGV[12]): told plus the grace by default; the presence_window when one is set; 0 with
// presence_window off (everyone admitted in turn).
func (g *Gateway) PresenceFor(told time.Duration) time.Duration {
	switch {
	case g.PresenceWindow < 0:
		return 0
	case g.PresenceWindow > 0:
		return g.PresenceWindow
	}
	return told + g.presenceGrace()
}

// presenceAt is PresenceFor with the pre-queue's rule: before the start a waiter is told the
// start as his wait, so he counts as present at least until the start plus the shortest
// refresh (and the grace), whatever refresh_s he was told. Without it, a waiter who entered
// the pre-queue and came back, as told, at the start was passed as absent by the first steps,
// and the units went to whoever happened to poll last instead of down the permutation.
func (g *Gateway) presenceAt(c *Cached, told time.Duration, now time.Time) time.Duration {
	if now.Before(c.Room.Starts) {
		told = max(told, c.Room.Starts.Sub(now)+g.Refresh.Min)
	}
	return g.PresenceFor(told)
}

// ToldFor is the refresh_s this gateway expects to tell a waiter whose poll (index: his
// placed ticket's queue index, -1 without one) or entry goes to Redis: from the summary (the
// cursor only moves forward, so the summary's ahead is at least the real one), else the
// shortest refresh. Redis records him present for ToldFor plus the grace, and the answer's
// refresh_s is capped at it (CapRefresh): a waiter who does as he is told is never passed
// as absent.
func (g *Gateway) ToldFor(c *Cached, index int64, now time.Time) time.Duration {
	if now.Before(c.Room.Starts) {
		return time.Duration(g.Refresh.After(c.Room.Starts.Sub(now))) * time.Second
	}
	s, ok := c.View.Last()
	if !ok || s.Outcome != Open {
		return g.Refresh.Min
	}
	ahead := s.Depth
	if index >= 0 {
		ahead = max(index-s.Cursor, 0)
	}
	rep := Reply{Stock: s.Stock, Admitted: s.Admitted, Now: s.Now.Add(now.Sub(s.Read))}
	return time.Duration(g.Refresh.After(c.PaceFrom(rep).Wait(ahead).Point)) * time.Second
}

// CapRefresh keeps a waiting answer's refresh_s within what Redis recorded his presence for.
func (g *Gateway) CapRefresh(v *Verdict, told time.Duration) {
	if g.PresenceWindow != 0 || v.Answer.State != string(Waiting) {
		return
	}
	if s := int64(told / time.Second); s >= 1 && v.Answer.RefreshS > s {
		v.Answer.RefreshS = s
	}
}

// FromMemory answers a poll from the room's summary when it can: ok is false when the poll
// must ask Redis (near the front, no placed ticket after the start, no summary).
func (g *Gateway) FromMemory(ctx context.Context, sale, user string, c *Cached, index int64) (Verdict, Reply, bool) {
	now := g.Now()
	beforeStart := now.Before(c.Room.Starts)
	if index < 0 && !beforeStart {
		return Verdict{}, Reply{}, false
	}
	front := FrontPlaces(c.Room.Rate, g.FrontWindow)
	// asks tells a place that the summary cannot answer. By default only a place the
	// summary's cursor has reached: one beyond it is still waiting (the cursor only moves
	// forward, so at most one summary interval late it hears otherwise). A place inside the
	// cursor (admitted, passed, lapsed) is answered from the decisions the ticks brought
	// (decided.go) when they hold its own, else it asks Redis. With front_window set, every
	// poll of a waiting place within it asks Redis.
	asks := func(s Summary) bool {
		if g.FrontWindow > 0 {
			return index-s.Cursor <= front
		}
		return index < s.Cursor
	}
	if s, ok := c.View.Last(); ok && s.Outcome == Open && index >= 0 && asks(s) {
		// The cursor only moves forward and the index only back, so a summary of any age
		// that says so is still right. Without a decision in memory, no tick for these polls.
		if index >= s.Cursor {
			return Verdict{}, Reply{}, false
		}
		if _, ok := c.View.decisionOf(user); !ok {
			return Verdict{}, Reply{}, false
		}
	}
	s, ok := c.View.Current(ctx, now, g.SummaryInterval, func(ctx context.Context, present []Seen) (Reply, error) {
		rep, err := g.Store.Visit(ctx, sale, Visit{Tick: true, Present: present, Decided: c.View.Decided(), Settings: c.Room.Settings,
			Admit: c.View.ClaimAdmission(g.Now(), g.AdmitInterval), AdmitLease: g.AdmitInterval, Presence: g.PresenceFor(0)})
		add(g.Counts.Admissions, float64(rep.AdmittedNow))
		add(g.Counts.Lapsed, float64(rep.LapsedNow))
		if err == nil {
			g.PassOnBanned(ctx, sale, c, rep)
		}
		return rep, err
	})
	if !ok {
		return Verdict{}, Reply{}, false
	}
	// Redis's time now, as far as this gateway can tell: the tick's plus the time since.
	rnow := s.Now.Add(now.Sub(s.Read))
	rep := Reply{Outcome: s.Outcome, Now: rnow, Stock: s.Stock, Depth: s.Depth, Starts: c.Room.Starts, Admitted: s.Admitted}
	switch {
	case !rnow.Before(c.Room.Ends):
		rep.Outcome = Ended
	case s.Outcome == SoldOut || s.Outcome == Paused || s.Outcome == Ended:
	case s.Outcome == BeforeStart && rnow.Before(c.Room.Starts):
		// Before the start the order is not drawn: everyone is told the pre-queue's size.
		rep.Outcome, rep.Position, rep.Ahead = Waiting, s.Depth, max(s.Depth-1, 0)
	case s.Outcome == Open && index >= 0 && !asks(s):
		rep.Outcome = Waiting
		rep.Position = index - s.Cursor + 1
		rep.Ahead = rep.Position - 1
	case s.Outcome == Open && index >= 0 && index < s.Cursor && s.Stock > 0:
		// Inside the cursor: what the step decided for the place, as room_queue.lua answers it
		// (with no units left it answers sold out or a waitlist's offer: Redis's to tell).
		d, ok := c.View.decisionOf(user)
		if !ok {
			return Verdict{}, Reply{}, false
		}
		if rep, ok = fromDecision(d, rep, g.PresenceFor(0) > 0); !ok {
			return Verdict{}, Reply{}, false
		}
	default:
		return Verdict{}, Reply{}, false
	}
	add(g.Counts.FromMemory, 1)
	v := Decide(rep, false, c.PaceFrom(rep), g.Refresh)
	if rep.Outcome == Waiting {
		c.View.Seen(user, g.presenceAt(c, time.Duration(v.Answer.RefreshS)*time.Second, now))
	}
	return v, rep, true
}
