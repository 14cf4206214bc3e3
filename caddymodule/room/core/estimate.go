package core

import (
	"math"
	"sync"
	"time"
)

// Pace is what a waiter's estimate knows of how fast the room admits (an honest
// estimate is a range, not the configured rate alone).
type Pace struct {
	// Rate is the room's rate: admissions never go faster, so it bounds the wait from below.
	Rate float64
	// Observed is the admission rate measured lately across gateways (the room's admitted
	// counter over time), when Measured.
	Observed float64
	Measured bool
	// Floor is the slowest admissions go while units remain: every live admission ends
	// (bought or lapsed) within a session, so stock x oversubscribe places free up per
	// session at least. 0 when not known (sold out).
	Floor float64
}

// paceSpread widens the observed rate into a range: the rate measured over the last seconds
// moves when buyers stop buying or a batch of admissions lapses, and a waiter is better told
// "between 2 and 5 minutes" than a precise number that is wrong.
const paceSpread = 1.5

// FloorRate is Pace.Floor for a room with stock units left.
func FloorRate(rate float64, stock int64, s Settings) float64 {
	if stock <= 0 || s.Session <= 0 {
		return 0
	}
	live := math.Floor(float64(stock)*max(s.Oversubscribe, 1) + 1e-9)
	return min(rate, live/s.Session.Seconds())
}

// Estimate is a waiter's estimated wait: a point (estimated_wait_s) within a range.
type Estimate struct {
	Lo, Point, Hi time.Duration
}

// Wait estimates how long ahead places take to be admitted: at best at the room's rate, most
// likely at the observed rate (never below the floor: a room admitting nobody lately, its
// live admissions full, still frees them within a session), at worst at the slower of the
// observed rate / paceSpread and the floor. Without a measure the point is ahead / rate (what
// it always was) and the range reaches the floor.
func (p Pace) Wait(ahead int64) Estimate {
	if ahead <= 0 || p.Rate <= 0 {
		return Estimate{}
	}
	at := func(rate float64) time.Duration {
		if rate <= 0 {
			return 0
		}
		return time.Duration(float64(ahead) / rate * float64(time.Second))
	}
	lo := at(p.Rate)
	floor := min(p.Floor, p.Rate)
	if !p.Measured {
		e := Estimate{Lo: lo, Point: lo, Hi: lo}
		if floor > 0 {
			e.Hi = at(floor)
		}
		return e
	}
	obs := min(max(p.Observed, floor), p.Rate)
	e := Estimate{Lo: at(min(p.Rate, obs*paceSpread)), Point: at(obs), Hi: at(max(obs/paceSpread, floor))}
	return e
}

// Seconds is the range as the answer shows it: whole seconds, rounded up, lo <= hi.
func (e Estimate) Seconds() (lo, point, hi int64) {
	s := func(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }
	lo, point, hi = s(e.Lo), s(e.Point), s(e.Hi)
	return lo, min(max(point, lo), hi), hi
}

// AdmissionPace measures a room's admission rate on this gateway from the admitted counter
// room_queue.lua returns (Redis's, across every gateway) at Redis's time: samples at least
// paceStep apart, the rate over the oldest and newest kept. Memory is a fixed array per room.
type AdmissionPace struct {
	mu      sync.Mutex
	samples [paceSamples]paceSample
	n, next int
}

type paceSample struct {
	at       time.Time
	admitted int64
}

// The window: 8 samples 2 s apart measure over the last 14 to 16 s, long enough to smooth a
// burst of admissions, short enough to follow a room that slows down.
const (
	paceSamples = 8
	paceStep    = 2 * time.Second
)

// Observe counts the admitted counter at Redis time at.
func (a *AdmissionPace) Observe(admitted int64, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n > 0 {
		last := a.samples[(a.next+paceSamples-1)%paceSamples]
		if admitted < last.admitted {
			// The counter went back (the room was set up again): start over.
			a.n, a.next = 0, 0
		} else if at.Sub(last.at) < paceStep {
			return
		}
	}
	a.samples[a.next] = paceSample{at: at, admitted: admitted}
	a.next = (a.next + 1) % paceSamples
	a.n = min(a.n+1, paceSamples)
}

// Rate is the measured rate, or, before two samples span a step, the average since the start
// (admitted at now); ok is false when neither is known.
func (a *AdmissionPace) Rate(admitted int64, now, starts time.Time) (r float64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n >= 2 {
		oldest := a.samples[(a.next+paceSamples-a.n)%paceSamples]
		newest := a.samples[(a.next+paceSamples-1)%paceSamples]
		if span := newest.at.Sub(oldest.at); span >= paceStep {
			return float64(newest.admitted-oldest.admitted) / span.Seconds(), true
		}
	}
	if since := now.Sub(starts); since >= paceStep {
		return float64(admitted) / since.Seconds(), true
	}
	return 0, false
}
