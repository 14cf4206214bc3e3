//go:build integration

package saleevents

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// recorder is a Handler that records what it is told and signals each call.
type recorder struct {
	mu         sync.Mutex
	subscribed int
	lost       int
	events     []Event
	signal     chan struct{}
}

func (r *recorder) handler() Handler {
	note := func(f func()) {
		r.mu.Lock()
		f()
		r.mu.Unlock()
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
	return Handler{
		Subscribed: func() { note(func() { r.subscribed++ }) },
		Event:      func(ev Event) { note(func() { r.events = append(r.events, ev) }) },
		Lost:       func(error) { note(func() { r.lost++ }) },
	}
}

func (r *recorder) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Events published on the channel reach the handler; a killed connection is reported lost
// and resubscribed (Subscribed again, so the user drops what it may have missed); Run ends
// with its context.
func TestRunDeliversEventsAndResubscribesAfterALostConnection(t *testing.T) {
	srv := testenv.StartRedis(t) // private: its clients are ours to kill
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{signal: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { defer close(done); Run(ctx, rdb, r.handler()) }()

	r.await(t, "the subscription", func() bool { return r.subscribed == 1 })
	rdb.Publish(ctx, contract.EventsChannel, "sold_out:s1")
	rdb.Publish(ctx, contract.EventsChannel, "garbage")
	rdb.Publish(ctx, contract.EventsChannel, "restock:s1:3")
	r.await(t, "two events", func() bool { return len(r.events) == 2 })
	if r.events[0] != (Event{contract.EventSoldOut, "s1"}) || r.events[1] != (Event{contract.EventRestock, "s1:3"}) {
		t.Fatalf("events %+v", r.events)
	}

	if err := rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	r.await(t, "a second subscription after the kill", func() bool { return r.subscribed >= 2 })
	rdb.Publish(ctx, contract.EventsChannel, "sold_out:s2")
	r.await(t, "an event after resubscribing", func() bool { return len(r.events) == 3 })

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
}
