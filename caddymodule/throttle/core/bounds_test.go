package core

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// heapAfter returns the live heap after fill ran, keeping keep alive through the measure.
func heapGrowth(fill func() any) (grew uint64, keep any) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep = fill()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0, keep
	}
	return after.HeapAlloc - before.HeapAlloc, keep
}

// localTierBound is what one zone's local tier may hold after any number of distinct keys:
// MaxShieldEntries / MaxBlocklistEntries keys at well under 300 bytes each.
const localTierBound = 32 << 20

// An attacker spraying a million distinct client keys (a header value is attacker input)
// leaves each local tier at its bound, not at a million entries.
func TestAMillionDistinctKeysLeaveTheLocalTiersBounded(t *testing.T) {
	// -short checks the same property at a tenth of the scale: ten times more keys than the
	// bound, in a second instead of twenty.
	keys, shieldMax, blockMax, bound := 1_000_000, MaxShieldEntries, MaxBlocklistEntries, uint64(localTierBound)
	if testing.Short() {
		keys, shieldMax, blockMax, bound = keys/10, shieldMax/10, blockMax/10, bound/10
	}
	checkBlocklist := func(t *testing.T, b *Blocklist) *Blocklist {
		if n := b.Len(); n > blockMax {
			t.Errorf("blocklist holds %d keys, bound %d", n, blockMax)
		}
		return b
	}
	cases := map[string]func() any{
		"shield": func() any {
			s := NewShield(10, time.Minute, shieldMax)
			for i := range keys {
				s.Take("k"+strconv.Itoa(i), t0.Add(time.Duration(i)*time.Microsecond))
			}
			if n := s.Len(); n > shieldMax {
				t.Errorf("shield holds %d keys, bound %d", n, shieldMax)
			}
			return s
		},
		"blocklist Add": func() any {
			b := NewBlocklist(blockMax)
			for i := range keys {
				b.Add("k"+strconv.Itoa(i), Block{Until: t0.Add(time.Hour)}, t0)
			}
			return checkBlocklist(t, b)
		},
		"blocklist TryAdd": func() any {
			b := NewBlocklist(blockMax)
			for i := range keys {
				b.TryAdd("k"+strconv.Itoa(i), Block{Until: t0.Add(time.Hour)}, t0)
			}
			return checkBlocklist(t, b)
		},
		"blocklist Set": func() any {
			b := NewBlocklist(blockMax)
			for i := range keys {
				b.Set("k"+strconv.Itoa(i), Block{Until: t0.Add(time.Hour)}, t0)
			}
			return checkBlocklist(t, b)
		},
	}
	for name, fill := range cases {
		t.Run(name, func(t *testing.T) {
			grew, keep := heapGrowth(fill)
			runtime.KeepAlive(keep)
			t.Logf("%s: heap grew %.1f MiB for %d distinct keys", name, float64(grew)/(1<<20), keys)
			if grew > bound {
				t.Fatalf("%s: heap grew %d bytes, bound %d", name, grew, bound)
			}
		})
	}
}

// A full shield still counts the keys it holds, and a full part makes room for a new key
// (the exact tier still holds an evicted one).
func TestAFullShieldKeepsWorking(t *testing.T) {
	s := NewShield(1, time.Minute, shieldShards) // one key per part
	for i := range 1000 {
		if ok, _ := s.Take("k"+strconv.Itoa(i), t0); !ok {
			t.Fatalf("new key %d refused by a full shield", i)
		}
	}
	if n := s.Len(); n > shieldShards {
		t.Fatalf("shield holds %d keys, bound %d", n, shieldShards)
	}
	s.Take("hot", t0)
	if ok, _ := s.Take("hot", t0); ok {
		t.Fatal("the key just counted must be held to its limit")
	}
	if ok, _ := s.Take("hot", t0.Add(time.Minute)); !ok {
		t.Fatal("a new window must admit again")
	}
}
