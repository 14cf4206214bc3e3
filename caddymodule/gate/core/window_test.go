package core

import (
	"context"
	"sync"
	"testing"
	"time"

	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
)

// fakeWindows is the window memory.
type fakeWindows struct {
	mu sync.Mutex
	m  map[string][2]int64
}

func (f *fakeWindows) Window(sale string) (int64, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.m[sale]
	return w[0], w[1], ok
}

func (f *fakeWindows) MarkWindow(sale string, starts, ends int64, _ hcore.Generation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[sale] = [2]int64{starts, ends}
}

// A not_started or ended answer teaches the gateway the window: clicks clearly outside it
// (more than WindowMargin by its clock) are answered from memory with no Store call; clicks
// nearer the edges, and inside, go to the script.
func TestTheWindowAnswersClicksClearlyOutsideItFromMemory(t *testing.T) {
	start := clock.Add(10 * time.Minute)
	end := start.Add(time.Hour)
	store := &fakeStore{verdict: map[string]Verdict{"s1": {Outcome: NotStarted, Starts: start.UnixMilli(), Ends: end.UnixMilli()}}}
	d, _ := newDecider(store, nil)
	now := clock
	d.Now = func() time.Time { return now }
	w := &fakeWindows{m: map[string][2]int64{}}
	d.Windows = w
	ctx := context.Background()
	decide := func() Verdict {
		t.Helper()
		v, _, err := d.Decide(ctx, Request{Sale: "s1", User: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := decide(); v.Outcome != NotStarted || v.Memory || len(store.calls) != 1 {
		t.Fatalf("first click: %+v after %d calls, want not_started from the script", v, len(store.calls))
	}
	for range 5 {
		if v := decide(); v.Outcome != NotStarted || !v.Memory {
			t.Fatalf("a click 10 minutes early: %+v, want not_started from memory", v)
		}
	}
	if len(store.calls) != 1 {
		t.Fatalf("%d script calls, want the first click's only", len(store.calls))
	}
	// Within the margin of the opening, and inside the window, the script decides.
	store.verdict["s1"] = Verdict{Outcome: Accepted}
	for _, at := range []time.Time{start.Add(-WindowMargin + time.Millisecond), start, end.Add(WindowMargin - time.Millisecond)} {
		now = at
		n := len(store.calls)
		if v := decide(); v.Memory || len(store.calls) != n+1 {
			t.Fatalf("a click at %v: %+v, want the script's answer", at.Sub(start), v)
		}
	}
	now = end.Add(WindowMargin)
	n := len(store.calls)
	if v := decide(); v.Outcome != Ended || !v.Memory || len(store.calls) != n {
		t.Fatalf("a click a second after the end: %+v, want ended from memory", v)
	}
	// An ended answer of the state (no window in it) teaches nothing.
	w.m = map[string][2]int64{}
	now = start.Add(time.Minute)
	store.verdict["s1"] = Verdict{Outcome: Ended}
	decide()
	if _, _, ok := w.Window("s1"); ok {
		t.Fatal("an ended answer without a window was remembered")
	}
}

// generalStore answers General to a common purchase on a target in general, as
// gate_common.lua does on a sale that is not common.
type generalStore struct {
	fakeStore
	general map[string]bool
}

func (s *generalStore) Decide(ctx context.Context, p Purchase) (Verdict, []any, error) {
	if s.general[p.Target] && !p.General {
		s.mu.Lock()
		s.calls = append(s.calls, p)
		s.mu.Unlock()
		return Verdict{Outcome: General}, nil, nil
	}
	return s.fakeStore.Decide(ctx, p)
}

// A sale that answers General is decided by gate.lua at once (without the zones, answered by
// the first call), and its later purchases go to gate.lua straight away; a common sale's
// purchases never ask for it.
func TestAGeneralSaleFallsBackToTheGeneralScriptAndIsRemembered(t *testing.T) {
	store := &generalStore{fakeStore: fakeStore{verdict: map[string]Verdict{"s1": {Outcome: Accepted}, "s2": {Outcome: Accepted}}},
		general: map[string]bool{"s1": true}}
	d, _ := newDecider(&store.fakeStore, nil)
	d.Store = store
	ctx := context.Background()
	zones := &countingJoint{}
	v, _, err := d.Decide(ctx, Request{Sale: "s1", User: "u1", Zones: zones})
	if err != nil || v.Outcome != Accepted {
		t.Fatalf("first purchase: %+v %v", v, err)
	}
	if len(store.calls) != 2 || store.calls[0].General || !store.calls[1].General || store.calls[1].Zones != nil {
		t.Fatalf("calls %+v, want the common one with the zones, then gate.lua's without", store.calls)
	}
	if zones.answered != 1 {
		t.Fatalf("the zones were answered %d times, want once", zones.answered)
	}
	if v, _, _ := d.Decide(ctx, Request{Sale: "s1", User: "u2"}); v.Outcome != Accepted || len(store.calls) != 3 || !store.calls[2].General {
		t.Fatalf("second purchase: %+v, calls %+v, want one gate.lua call", v, store.calls)
	}
	if v, _, _ := d.Decide(ctx, Request{Sale: "s2", User: "u1"}); v.Outcome != Accepted || len(store.calls) != 4 || store.calls[3].General {
		t.Fatalf("a common sale's purchase: %+v, calls %+v, want one common call", v, store.calls)
	}
}

// countingJoint is a zones check that admits, counting its answers.
type countingJoint struct{ answered int }

func (j *countingJoint) AppendKeys(dst []string) []string { return dst }
func (j *countingJoint) AppendArgs(dst []any) []any       { return dst }
func (j *countingJoint) Answer([]any, error) bool {
	j.answered++
	return false
}
