package core

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// step is one element of the room's decided list, as room_queue.lua pushes it.
func step(until int64, tokens ...string) string {
	return fmt.Sprintf("%d %s", until, strings.Join(tokens, " "))
}

func TestTheDecisionsInMemoryFollowTheSteps(t *testing.T) {
	v := NewView()
	v.dec.apply(&Decisions{Count: 2, Steps: []string{step(5000, "sann", "fbot", "abob"), step(6000, "aann", "xbob")}})
	if got := v.Decided(); got != 2 {
		t.Fatalf("count %d, want 2", got)
	}
	// ann was passed, then admitted: the latest decision holds. bob's admission ended early:
	// forgotten, his poll asks Redis.
	if d, ok := v.decisionOf("ann"); !ok || d.kind != 'a' || d.until != 6000 {
		t.Fatalf("ann: %+v %v", d, ok)
	}
	if d, ok := v.decisionOf("bot"); !ok || d.kind != 'f' {
		t.Fatalf("bot: %+v %v", d, ok)
	}
	if _, ok := v.decisionOf("bob"); ok {
		t.Fatal("bob's ended admission is still remembered")
	}
	// A malformed element is skipped; the others are read.
	v.dec.apply(&Decisions{Count: 4, Steps: []string{"junk a", step(7000, "scy")}})
	if d, ok := v.decisionOf("cy"); !ok || d.kind != 's' {
		t.Fatalf("cy: %+v %v", d, ok)
	}
	// A gap forgets everything older: a decision missed may have changed any of them.
	v.dec.apply(&Decisions{Count: 900, Gap: true, Steps: []string{step(8000, "adee")}})
	for _, u := range []string{"ann", "bot", "cy"} {
		if _, ok := v.decisionOf(u); ok {
			t.Fatalf("%s remembered across a gap", u)
		}
	}
	if _, ok := v.decisionOf("dee"); !ok {
		t.Fatal("the decision read with the gap is not remembered")
	}
	// While the waitlist runs, nothing is answered from decisions.
	v.dec.apply(&Decisions{Count: 900, Waitlist: true})
	if _, ok := v.decisionOf("dee"); ok {
		t.Fatal("a decision answered while the waitlist runs")
	}
}

func TestADecisionIsAnsweredAsTheScriptAnswersIt(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	rep := Reply{Outcome: Open, Now: now, Stock: 5}
	until := now.Add(10 * time.Second)
	if got, ok := fromDecision(decision{kind: 'a', until: until.UnixMilli()}, rep, true); !ok || got.Outcome != Admitted || !got.AdmittedUntil.Equal(until) {
		t.Fatalf("admitted: %+v %v", got, ok)
	}
	if _, ok := fromDecision(decision{kind: 'a', until: now.Add(decidedMargin).UnixMilli()}, rep, true); ok {
		t.Fatal("an admission within the margin of its end answered from memory")
	}
	for _, kind := range []byte{'s', 'f'} {
		if got, ok := fromDecision(decision{kind: kind}, rep, true); !ok || got.Outcome != Waiting || got.Position != 1 || got.Ahead != 0 {
			t.Fatalf("%c: %+v %v, want waiting first in line", kind, got, ok)
		}
	}
	// Without presence the script does not look at the away set: a passed place is Redis's.
	if _, ok := fromDecision(decision{kind: 's'}, rep, false); ok {
		t.Fatal("a place passed while absent answered from memory without presence")
	}
}

func TestTheDecisionsInMemoryStayWithinTheirBound(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rooms = 10
	views := make([]*View, rooms)
	for i := range views {
		views[i] = NewView()
		var steps []string
		for s := range 3 * MaxDecided / 50 {
			toks := make([]string, 50)
			for j := range toks {
				toks[j] = fmt.Sprintf("auser-%08d-%d", s*50+j, i)
			}
			steps = append(steps, step(int64(s), toks...))
		}
		views[i].dec.apply(&Decisions{Count: int64(len(steps)), Steps: steps})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / rooms
	for _, v := range views {
		if len(v.dec.users) != MaxDecided || len(v.dec.order) != MaxDecided {
			t.Fatalf("a view remembers %d decisions (%d in order), want %d", len(v.dec.users), len(v.dec.order), MaxDecided)
		}
		// The newest are the ones kept.
		if _, ok := v.dec.users[fmt.Sprintf("user-%08d-0", 3*MaxDecided/50*50-1)]; !ok && v == views[0] {
			t.Fatal("the newest decision was evicted")
		}
	}
	t.Logf("a full memory of decisions: %d bytes (%d users)", per, MaxDecided)
	if per > 1<<20 {
		t.Fatalf("a full memory of decisions takes %d bytes, want at most 1 MiB", per)
	}
	runtime.KeepAlive(views)
}
