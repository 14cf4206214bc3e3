package core

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// A gateway's view of a room is bounded: the pace's samples, one summary and at most
// MaxPresent users, whatever the number of waiters.
func TestARoomViewStaysWithinItsBound(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rooms = 20
	views := make([]*View, rooms)
	for i := range views {
		views[i] = NewView()
		for u := range 3 * MaxPresent {
			views[i].Seen(fmt.Sprintf("user-%08d-%d", u, i), time.Second)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / rooms
	for _, v := range views {
		if len(v.present) != MaxPresent {
			t.Fatalf("a view remembers %d users, want at most %d", len(v.present), MaxPresent)
		}
	}
	t.Logf("a full room view: %d bytes (%d users remembered)", per, MaxPresent)
	if per > 512<<10 {
		t.Fatalf("a full room view takes %d bytes, want at most 512 KiB", per)
	}
	runtime.KeepAlive(views)
}

// The admission step is claimed at most once per interval per room on a gateway.
func TestTheAdmissionStepIsClaimedAtMostOncePerInterval(t *testing.T) {
	v := NewView()
	t0 := time.Unix(1000, 0)
	if !v.ClaimAdmission(t0, 100*time.Millisecond) {
		t.Fatal("the first call does not admit")
	}
	for _, d := range []time.Duration{0, time.Millisecond, 99 * time.Millisecond} {
		if v.ClaimAdmission(t0.Add(d), 100*time.Millisecond) {
			t.Fatalf("a second admission step %v after the first", d)
		}
	}
	if !v.ClaimAdmission(t0.Add(100*time.Millisecond), 100*time.Millisecond) {
		t.Fatal("no admission step after the interval")
	}
	// A clock that steps back does not stop admission.
	if !v.ClaimAdmission(t0, 100*time.Millisecond) {
		t.Fatal("no admission step after the clock stepped back")
	}
}
