package redislock

import (
	"testing"
	"time"
)

func TestExponentialBackoffGrowsWithJitterWithinBounds(t *testing.T) {
	r := ExponentialBackoff(10*time.Millisecond, 200*time.Millisecond)
	for attempt := range 100 {
		ceiling := min(10*time.Millisecond<<min(attempt, 20), 200*time.Millisecond)
		for range 20 {
			d := r(attempt)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, ceiling/2, ceiling)
			}
		}
	}
	if d := LinearBackoff(7 * time.Millisecond)(5); d != 7*time.Millisecond {
		t.Fatalf("LinearBackoff = %v", d)
	}
	if d := NoRetry()(0); d > 0 {
		t.Fatalf("NoRetry polls after %v", d)
	}
}
