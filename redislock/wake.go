package redislock

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiting Obtain calls of one process share one pub/sub connection per Redis client (a hub),
// whatever the number of locks and waiters. A release message for a lock wakes only the
// first local waiter of that lock (FIFO): the others could not take the lock anyway, so a
// release costs each process one acquire attempt, not one per waiting goroutine, and local
// waiters are served in arrival order.

type hub struct {
	rdb    redis.UniversalClient
	ps     *redis.PubSub
	refs   int // waiters of any lock; the hub closes when it drops to 0
	mu     sync.Mutex
	queues map[string][]*waiter // channel -> waiters in arrival order
	// woken: channel -> token of a release already signalled locally, so that its pub/sub
	// message (which follows) does not wake a second waiter for nothing.
	woken map[string]string
}

type waiter struct {
	h       *hub
	channel string
	wake    chan struct{} // capacity 1: a wake-up is never lost while the waiter is busy
}

var hubs = struct {
	sync.Mutex
	m map[redis.UniversalClient]*hub
}{m: map[redis.UniversalClient]*hub{}}

// subscribeTimeout bounds a SUBSCRIBE/UNSUBSCRIBE write; a failure only costs wake-up
// latency (the waiter still polls and watches the lease).
const subscribeTimeout = 2 * time.Second

func join(rdb redis.UniversalClient, channel string) *waiter {
	hubs.Lock()
	h := hubs.m[rdb]
	if h == nil {
		h = &hub{rdb: rdb, ps: rdb.Subscribe(context.Background()), queues: map[string][]*waiter{},
			woken: map[string]string{}}
		go h.run(h.ps.ChannelWithSubscriptions(redis.WithChannelSize(256)))
		hubs.m[rdb] = h
	}
	h.refs++
	hubs.Unlock()

	w := &waiter{h: h, channel: channel, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	q := h.queues[channel]
	h.queues[channel] = append(q, w)
	if len(q) == 0 {
		// Under h.mu so that subscribe and unsubscribe of one channel reach Redis in order.
		ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
		_ = h.ps.Subscribe(ctx, channel)
		cancel()
	}
	h.mu.Unlock()
	return w
}

func (w *waiter) leave() {
	h := w.h
	h.mu.Lock()
	q := h.queues[w.channel]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(h.queues, w.channel)
		delete(h.woken, w.channel)
		ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
		_ = h.ps.Unsubscribe(ctx, w.channel)
		cancel()
	} else {
		h.queues[w.channel] = q
		select {
		case <-w.wake:
			// We were woken but leave without trying (gave up, or obtained the lock through
			// an earlier attempt): pass the wake-up on.
			signal(q[0])
		default:
		}
	}
	h.mu.Unlock()

	hubs.Lock()
	h.refs--
	if h.refs == 0 {
		delete(hubs.m, h.rdb)
		_ = h.ps.Close()
	}
	hubs.Unlock()
}

func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wakeLocal wakes the first waiter of this process at once when a lock it released is free,
// a goroutine hop and a pub/sub delivery sooner than the release message.
func wakeLocal(rdb redis.UniversalClient, channel string, token int64) {
	hubs.Lock()
	h := hubs.m[rdb]
	hubs.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	if q := h.queues[channel]; len(q) > 0 {
		h.woken[channel] = strconv.FormatInt(token, 10)
		signal(q[0])
	}
	h.mu.Unlock()
}

func (h *hub) run(msgs <-chan interface{}) {
	for m := range msgs {
		var channel string
		switch m := m.(type) {
		case *redis.Message:
			channel = m.Channel
			h.mu.Lock()
			dup := h.woken[channel] == m.Payload
			if dup {
				delete(h.woken, channel)
			}
			h.mu.Unlock()
			if dup {
				continue
			}
		case *redis.Subscription:
			// A (re)subscription confirmation: a release may have slipped by before it, or
			// during a reconnect. Waking the first waiter costs one acquire attempt.
			if m.Kind != "subscribe" {
				continue
			}
			channel = m.Channel
		default:
			continue
		}
		h.mu.Lock()
		if q := h.queues[channel]; len(q) > 0 {
			signal(q[0])
		}
		h.mu.Unlock()
	}
}
