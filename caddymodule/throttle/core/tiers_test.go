package core

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

func TestBlocklistRefusesUntilTheRetryTimeAndNotAfter(t *testing.T) {
	b := NewBlocklist(0)
	b.Add("k", Block{Until: t0.Add(2 * time.Second)}, t0)
	if _, ok := b.Lookup("k", t0.Add(1999*time.Millisecond)); !ok {
		t.Fatal("key must be blocked before its retry time")
	}
	if _, ok := b.Lookup("k", t0.Add(2*time.Second)); ok {
		t.Fatal("key must be free at its retry time")
	}
	if b.Len() != 0 {
		t.Fatal("an expired entry found by Lookup must be removed")
	}
	if _, ok := b.Lookup("other", t0); ok {
		t.Fatal("unknown key blocked")
	}
}

func TestBlocklistKeepsTheLaterRetryTime(t *testing.T) {
	b := NewBlocklist(0)
	b.Add("k", Block{Until: t0.Add(10 * time.Second), Banned: true}, t0)
	b.Add("k", Block{Until: t0.Add(1 * time.Second)}, t0) // an older answer arriving late
	e, ok := b.Lookup("k", t0.Add(5*time.Second))
	if !ok || !e.Banned {
		t.Fatalf("a shorter, later-arriving refusal must not cut a ban short: %+v %v", e, ok)
	}
	b.Add("k", Block{Until: t0}, t0)
	if _, ok := b.Lookup("k", t0.Add(5*time.Second)); !ok {
		t.Fatal("an already expired entry must not replace a live one")
	}
}

func TestBlocklistStaysBoundedUnderManyKeys(t *testing.T) {
	b := NewBlocklist(blocklistShards * 10)
	for i := 0; i < 10_000; i++ {
		b.Add(strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String(), Block{Until: t0.Add(time.Minute)}, t0)
	}
	if n := b.Len(); n > blocklistShards*10 {
		t.Fatalf("blocklist holds %d entries, bound is %d", n, blocklistShards*10)
	}
	// Once the entries expired, new keys find room again.
	later := t0.Add(2 * time.Minute)
	b.Add("fresh", Block{Until: later.Add(time.Second)}, later)
	if _, ok := b.Lookup("fresh", later); !ok {
		t.Fatal("a full blocklist must sweep expired entries to make room")
	}
}

func TestShieldHoldsAdmittedPlusInFlightAndRefundsRefusals(t *testing.T) {
	s := NewShield(3, time.Hour, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := s.Take("k", t0); !ok {
			t.Fatalf("take %d refused under the limit", i)
		}
	}
	if ok, reset := s.Take("k", t0); ok || reset.IsZero() {
		t.Fatalf("fourth in-flight request must be refused with a reset time, got ok=%v reset=%v", ok, reset)
	}
	// The refused take was undone: refunding one request (Redis refused it) frees exactly one.
	s.Refund("k")
	if ok, _ := s.Take("k", t0); !ok {
		t.Fatal("a refunded slot must be usable again")
	}
	if ok, _ := s.Take("k", t0); ok {
		t.Fatal("refusals must not leak slots: only one was refunded")
	}
	if ok, _ := s.Take("other", t0); !ok {
		t.Fatal("keys are independent")
	}
}

func TestZonesAreOrderedTightestFirst(t *testing.T) {
	rules := []Rule{
		{Name: "ip", Limit: 100, Window: time.Minute},    // 1.67/s
		{Name: "user", Limit: 5, Window: time.Second},    // 5/s
		{Name: "device", Limit: 10, Window: time.Minute}, // 0.17/s
		{Name: "burst", Limit: 1, Window: time.Second},   // 1/s
		{Name: "user2", Limit: 50, Window: 10 * time.Second},
	}
	SortTightestFirst(rules)
	var got []string
	for _, r := range rules {
		got = append(got, r.Name)
	}
	want := "device burst ip user user2" // user and user2 tie at 5/s: the shorter window first
	if strings.Join(got, " ") != want {
		t.Fatalf("order = %v, want %s", got, want)
	}
}

func TestBlocklistProbeAnswersReplaceTheProvisionalEntry(t *testing.T) {
	b := NewBlocklist(0)
	if !b.TryAdd("k", Block{Until: t0.Add(5 * time.Second)}, t0) {
		t.Fatal("the first refusal of an episode must win the probe")
	}
	if b.TryAdd("k", Block{Until: t0.Add(5 * time.Second)}, t0) {
		t.Fatal("a concurrent refusal must not probe too")
	}
	b.Set("k", Block{Until: t0.Add(time.Second)}, t0) // Redis: a slot frees in 1s
	if _, ok := b.Lookup("k", t0.Add(1500*time.Millisecond)); ok {
		t.Fatal("Redis's shorter retry time must replace the provisional one")
	}
	b.TryAdd("k", Block{Until: t0.Add(5 * time.Second)}, t0)
	b.Remove("k") // Redis admitted the probe
	if _, ok := b.Lookup("k", t0); ok {
		t.Fatal("an admitted probe must clear the entry")
	}
}
