package core

import (
	"testing"
	"time"
)

func TestEntryRateCountsTheLastWholeSecondAsRedisKeepsIt(t *testing.T) {
	// rate_s, rate_cur, rate_prev as room_queue.lua writes them, read at later seconds.
	cases := []struct{ sec, s, cur, prev, want int64 }{
		{100, 100, 30, 10, 30}, {100, 100, 5, 40, 40}, {101, 100, 30, 10, 30}, {102, 100, 30, 10, 0}, {99, 100, 30, 10, 0},
	}
	for _, c := range cases {
		if got := EntryRateAt(c.sec, c.s, c.cur, c.prev); got != c.want {
			t.Errorf("at %d of {%d %d %d}: %d, want %d", c.sec, c.s, c.cur, c.prev, got, c.want)
		}
	}
	var e EntryRate
	t0 := time.Unix(100, 0)
	e.Observe(30, t0)
	if got := e.Get(t0.Add(time.Second)); got != 30 {
		t.Fatalf("rate = %v, want 30", got)
	}
	if got := e.Get(t0.Add(3 * time.Second)); got != 0 {
		t.Fatalf("a view 3 s old = %v, want 0", got)
	}
}
