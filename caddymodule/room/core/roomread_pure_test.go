package core

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowRoomStore answers Room after release is closed, counting the calls; nothing else.
type slowRoomStore struct {
	Store
	reads   atomic.Int64
	release chan struct{}
}

func (s *slowRoomStore) Room(context.Context, string) (SaleRoom, bool, error) {
	s.reads.Add(1)
	<-s.release
	return SaleRoom{Settings: Settings{Rate: 10}}, true, nil
}

// Once a room's reading is older than cache_ttl, concurrent requests read it again once: the
// others keep the last reading meanwhile, instead of each sending the same commands.
func TestConcurrentRequestsReadAnExpiredRoomOnce(t *testing.T) {
	store := &slowRoomStore{release: make(chan struct{})}
	close(store.release)
	g := NewGateway(Timing{CacheTTL: time.Second}, Counts{})
	g.Store = store
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	g.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	first, ok, err := g.Room(context.Background(), "s")
	if err != nil || !ok || store.reads.Load() != 1 {
		t.Fatalf("first read: %v %v, %d reads", ok, err, store.reads.Load())
	}

	store.release = make(chan struct{})
	mu.Lock()
	clock = clock.Add(2 * time.Second)
	mu.Unlock()
	const callers = 32
	var wg sync.WaitGroup
	var stale atomic.Int64
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		if _, ok, err := g.Room(context.Background(), "s"); err != nil || !ok {
			t.Errorf("the reading request: %v %v", ok, err)
		}
	}()
	for store.reads.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, ok, err := g.Room(context.Background(), "s")
			if err != nil || !ok {
				t.Errorf("a request meanwhile: %v %v", ok, err)
			}
			if c == first {
				stale.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The requests meanwhile return at once with the last reading; one that reads the room
	// again instead blocks on release: seen as a third read.
	for returned := false; !returned; {
		select {
		case <-done:
			returned = true
		default:
			if store.reads.Load() > 2 {
				close(store.release)
				t.Fatalf("%d reads of the room while one was in flight, want none", store.reads.Load()-2)
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(store.release)
	<-reading
	if got := store.reads.Load(); got != 2 {
		t.Fatalf("%d reads of the room, want 2: one at the start, one after the TTL", got)
	}
	if stale.Load() != callers {
		t.Fatalf("%d of %d requests kept the last reading while it was read again", stale.Load(), callers)
	}
	if c, _, _ := g.Room(context.Background(), "s"); c == first {
		t.Fatal("the new reading was not kept")
	}
}
