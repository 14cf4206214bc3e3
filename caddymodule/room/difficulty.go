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

// MaxEntryRate is the highest entry rate (entries per second) at which difficulty d is still
// at least the one Difficulty asks for, or -1 when d is enough at any rate (d at the maximum,
// or no proof of work). room_queue.lua refuses an entry whose proof was sealed at d once the
// rate counted in Redis is above it: the difficulty is checked against the one in force at the
// entry, not at the challenge (issue 24, item 4). Difficulty only grows with the rate, so a
// binary search over integer rates finds the bound exactly, whatever the float rounding.
func MaxEntryRate(d, dmin, dmax int, baseline float64) int64 {
	if Difficulty(dmin, dmax, float64(int64(1)<<62), baseline) <= d {
		return -1
	}
	lo, hi := int64(-1), int64(1)<<62 // Difficulty(lo) <= d (or lo = -1), Difficulty(hi) > d
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if Difficulty(dmin, dmax, float64(mid), baseline) <= d {
			lo = mid
		} else {
			hi = mid
		}
	}
	return max(lo, 0)
}

// EntryRateAt is the entry rate room_queue.lua's counters (rate_s, rate_cur, rate_prev) show
// at second sec: the count of the last whole second, or of the current one when higher.
func EntryRateAt(sec, s, cur, prev int64) int64 {
	switch s {
	case sec:
		return max(cur, prev)
	case sec - 1:
		return cur
	}
	return 0
}

// entryRate is this gateway's latest view of a sale's entry rate across gateways: read with the
// room (every cache_ttl) and from every entry's reply. Counts are per second, so a view older
// than two seconds says nothing and reads as 0; an entry made on a challenge issued too easy
// is refused by Redis and brings the view up to date.
type entryRate struct {
	mu   sync.Mutex
	rate int64
	at   time.Time
}

// staleRate is how long a view of the entry rate holds.
const staleRate = 2 * time.Second

func (e *entryRate) observe(rate int64, now time.Time) {
	if rate < 0 {
		return
	}
	e.mu.Lock()
	e.rate, e.at = rate, now
	e.mu.Unlock()
}

func (e *entryRate) get(now time.Time) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Sub(e.at) >= staleRate {
		return 0
	}
	return float64(e.rate)
}
