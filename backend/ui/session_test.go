package ui

import (
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
)

// The sessions are a bounded map: when full, the session seen least recently makes room.
func TestCockpitSessionsStayBoundedAndDropTheLeastRecentlySeen(t *testing.T) {
	ss := newSessions()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	first := ss.open(httpapi.Principal{Name: "a", Role: httpapi.RoleAdmin}, now)
	second := ss.open(httpapi.Principal{Name: "b", Role: httpapi.RoleAdmin}, now.Add(time.Second))
	for i := 2; i < maxSessions; i++ {
		ss.open(httpapi.Principal{Name: "x", Role: httpapi.RoleViewer}, now.Add(2*time.Second))
	}
	if _, ok := ss.get(first, now.Add(3*time.Second)); !ok { // first is now the most recently seen
		t.Fatal("first session lost before the map was full")
	}
	ss.open(httpapi.Principal{Name: "c", Role: httpapi.RoleAdmin}, now.Add(4*time.Second))
	if n := ss.len(); n != maxSessions {
		t.Fatalf("%d sessions, want the bound %d", n, maxSessions)
	}
	if _, ok := ss.get(second, now.Add(5*time.Second)); ok {
		t.Fatal("the least recently seen session survived a full map")
	}
	if who, ok := ss.get(first, now.Add(5*time.Second)); !ok || who.Name != "a" {
		t.Fatal("a recently seen session was dropped")
	}
}
