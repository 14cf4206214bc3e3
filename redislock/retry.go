package redislock

import (
	"math/rand/v2"
	"time"
)

// RetryStrategy is the fallback poll schedule of a waiting Obtain: it returns how long to
// sleep before attempt number attempt (0, 1, 2, …) unless a release wakes the waiter first.
// Zero or less means "do not poll": wait for a release, the holder's lease end, or the end of
// Options.Wait. Strategies are plain functions without state, so one may be shared by every
// Obtain of a program.
type RetryStrategy func(attempt int) time.Duration

// NoRetry never polls: a waiting Obtain wakes only on a release, when the holder's lease
// runs out, or when Options.Wait ends.
func NoRetry() RetryStrategy { return func(int) time.Duration { return 0 } }

// LinearBackoff polls every d.
func LinearBackoff(d time.Duration) RetryStrategy { return func(int) time.Duration { return d } }

// ExponentialBackoff polls after min, 2*min, 4*min, … up to max, each delay drawn uniformly
// from its upper half ("equal jitter"), so waiters that started together do not poll
// together.
func ExponentialBackoff(min, max time.Duration) RetryStrategy {
	if min <= 0 {
		min = time.Millisecond
	}
	if max < min {
		max = min
	}
	return func(attempt int) time.Duration {
		d := max
		if attempt < 62 {
			if step := min << attempt; step > 0 && step < max {
				d = step
			}
		}
		half := d / 2
		return half + rand.N(d-half+1)
	}
}
