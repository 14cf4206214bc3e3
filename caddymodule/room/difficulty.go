package room

import (
	"math"
	"sync"
	"time"
)

// Difficulty is the proof-of-work difficulty for an entry rate: min while entries come at most
// at baseline per second, one more bit (twice the work) each time the rate doubles, never
// above max. A rush of scripted entries thus pays more per entry, and a quiet room costs
// people little.
func Difficulty(min, max int, rate, baseline float64) int {
	if max <= 0 {
		return 0
	}
	d := min
	if baseline > 0 && rate > baseline {
		d += int(math.Floor(math.Log2(rate/baseline))) + 1
	}
	if d > max {
		d = max
	}
	return d
}

// entryRate estimates entries per second seen by this gateway for one sale: the count of the
// last whole second, or the current second's when it is already higher.
type entryRate struct {
	mu        sync.Mutex
	second    int64
	cur, prev int64
}

func (e *entryRate) add(now time.Time) {
	e.mu.Lock()
	e.roll(now.Unix())
	e.cur++
	e.mu.Unlock()
}

func (e *entryRate) rate(now time.Time) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.roll(now.Unix())
	return float64(max(e.cur, e.prev))
}

func (e *entryRate) roll(sec int64) {
	switch {
	case sec == e.second:
	case sec == e.second+1:
		e.prev, e.cur, e.second = e.cur, 0, sec
	default:
		e.prev, e.cur, e.second = 0, 0, sec
	}
}
