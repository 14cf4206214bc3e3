package core

import (
	"sync"
	"time"
)

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

// EntryRate is this gateway's latest view of a sale's entry rate across gateways: read with the
// room (every cache_ttl) and from every entry's reply. Counts are per second, so a view older
// than two seconds says nothing and reads as 0. A new challenge is sealed at the difficulty
// this view asks for (sealed.Difficulty), and keeps it for its short life.
type EntryRate struct {
	mu   sync.Mutex
	rate int64
	at   time.Time
}

// staleRate is how long a view of the entry rate holds.
const staleRate = 2 * time.Second

// Observe records rate, read at now (a negative rate: not read, ignored).
func (e *EntryRate) Observe(rate int64, now time.Time) {
	if rate < 0 {
		return
	}
	e.mu.Lock()
	e.rate, e.at = rate, now
	e.mu.Unlock()
}

// Get is the entry rate at now, 0 once the view is staleRate old.
func (e *EntryRate) Get(now time.Time) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Sub(e.at) >= staleRate {
		return 0
	}
	return float64(e.rate)
}
