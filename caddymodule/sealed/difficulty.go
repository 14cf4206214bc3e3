package sealed

import "math"

// Difficulty is the proof-of-work difficulty for an entry rate: min while entries come at most
// at baseline per second, one more bit (twice the work) each time the rate doubles, never
// above max. A rush of scripted entries thus pays more per entry, and a quiet sale costs
// people little. It is the difficulty a new challenge is sealed with; a challenge keeps it
// for its whole (short) life.
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
