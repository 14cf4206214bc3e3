package core

import "time"

// Settings are one sale's room settings: the Caddyfile's defaults, overridden field by field
// by the sale's own (`"room": {...}` at sale creation, written into Redis at preheat).
type Settings struct {
	Rate          float64       // admissions per second
	Oversubscribe float64       // live admissions per remaining unit
	Session       time.Duration // an admission lapses after this long unused
	Prequeue      time.Duration // entries are taken from this long before the start
	DifficultyMin int           // proof-of-work bits; 0 and 0: no proof of work
	DifficultyMax int
	MaxWaiters    int64 // the most places the queue holds; 0: no bound
	// Conversion-aware admission (gateway settings, not the sale's): an admission
	// whose user took no token ClaimWindow after his presence deadline is a no-show and holds
	// no capacity; the live admissions stay within stock x OversubscribeMax (0: 4 x
	// Oversubscribe). ClaimWindow 0: every live admission holds capacity until it lapses.
	ClaimWindow      time.Duration
	OversubscribeMax float64
	// The sale's lanes (docs/room.md, "Lanes"; nil: one queue) and their mode, share or
	// priority: the sale's own, from the room hash.
	LaneMode string
	Lanes    []Lane
}

// DefaultOversubscribeMaxFactor is oversubscribe_max's default, per unit of oversubscribe.
const DefaultOversubscribeMaxFactor = 4

// MaxLive is the bound of live admissions per unit of stock under conversion-aware admission.
func (s Settings) MaxLive() float64 {
	if s.OversubscribeMax > 0 {
		return max(s.OversubscribeMax, s.Oversubscribe)
	}
	return DefaultOversubscribeMaxFactor * s.Oversubscribe
}

// The built-in bound of a room's places (docs/room.md, "Bounds"), for a sale and a Caddyfile
// that set no max_waiters: 50 places per unit of the sale's stock, at least
// MinDefaultWaiters, at most MaxDefaultWaiters (about 300 MB of Redis at 150 B a place).
const (
	WaitersPerUnit    = 50
	MinDefaultWaiters = 10_000
	MaxDefaultWaiters = 2_000_000
)

// DefaultMaxWaiters is the built-in bound for a sale set up with units of stock.
func DefaultMaxWaiters(units int64) int64 {
	return min(max(units*WaitersPerUnit, MinDefaultWaiters), MaxDefaultWaiters)
}

// PowRequired reports whether entering needs a solved challenge.
func (s Settings) PowRequired() bool { return s.DifficultyMax > 0 }
