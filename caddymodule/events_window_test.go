package caddymodule

import "testing"

// A window is kept only while the subscription is up and no event moved the sale's generation
// since it was asked for; window, paused, resumed and restock events and a resubscription
// forget it; another sale's events do not.
func TestTheWindowMemoryIsForgottenOnTheEventsThatMayChangeIt(t *testing.T) {
	e := &SaleEvents{}
	gen := e.Generation("s1")
	e.MarkWindow("s1", 10, 20, gen)
	if _, _, ok := e.Window("s1"); ok {
		t.Fatal("a window was kept while the subscription is down")
	}
	e.connected.Store(true)
	for _, ev := range []string{"window:s1", "paused:s1", "resumed:s1", "restock:s1"} {
		e.MarkWindow("s1", 10, 20, e.Generation("s1"))
		if s, en, ok := e.Window("s1"); !ok || s != 10 || en != 20 {
			t.Fatalf("window (%d, %d, %v), want (10, 20)", s, en, ok)
		}
		e.Apply("window:s2")
		if _, _, ok := e.Window("s1"); !ok {
			t.Fatal("another sale's event forgot the window")
		}
		e.Apply(ev)
		if _, _, ok := e.Window("s1"); ok {
			t.Fatalf("%q did not forget the window", ev)
		}
	}
	// A window asked for before an event is not kept after it.
	gen = e.Generation("s1")
	e.Apply("window:s1")
	e.MarkWindow("s1", 10, 20, gen)
	if _, _, ok := e.Window("s1"); ok {
		t.Fatal("a window heard before a window event was kept")
	}
	e.MarkWindow("s1", 10, 20, e.Generation("s1"))
	e.clearAll()
	if _, _, ok := e.Window("s1"); ok {
		t.Fatal("a resubscription did not forget the window")
	}
}
