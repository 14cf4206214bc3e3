package redislock

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiting Obtain calls of one Locker share one pub/sub connection (a hub), whatever the
// number of locks and waiters. A release message for a lock wakes only the first waiter of
// that lock in the Locker (FIFO): the others could not take the lock anyway, so a release
// costs each Locker one acquire attempt, not one per waiting goroutine, and its waiters are
// served in arrival order.
//
// The hub belongs to its Locker, not to the process: two Lockers (two prefixes, two
// libraries, two tests) never share subscriptions or wake-ups; between them a release travels
// by its pub/sub message, as between processes. The first waiter opens the hub and the last
// one closes it, so no connection or goroutine outlives the waiting.

type hub struct {
	ps     *redis.PubSub
	refs   int           // waiters of any lock, under Locker.mu; the hub closes when it drops to 0
	done   chan struct{} // closed when run has returned (the pub/sub channel was closed)
	mu     sync.Mutex
	queues map[string][]*waiter // channel -> waiters in arrival order
	// woken: channel -> token of a release already signalled locally, so that its pub/sub
	// message (which follows) does not wake a second waiter for nothing.
	woken map[string]string
}

type waiter struct {
	lk      *Locker
	h       *hub
	channel string
	wake    chan struct{} // capacity 1: a wake-up is never lost while the waiter is busy
}

// subscribeTimeout bounds a SUBSCRIBE/UNSUBSCRIBE write; a failure only costs wake-up
// latency (the waiter still polls and watches the lease).
const subscribeTimeout = 2 * time.Second

// join adds a waiter for channel, opening the Locker's hub if none is open.
func (lk *Locker) join(channel string) *waiter {
	lk.mu.Lock()
	h := lk.hub
	if h == nil {
		h = &hub{ps: lk.rdb.Subscribe(context.Background()), done: make(chan struct{}),
			queues: map[string][]*waiter{}, woken: map[string]string{}}
		go h.run(h.ps.ChannelWithSubscriptions(redis.WithChannelSize(256)))
		lk.hub = h
	}
	h.refs++
	lk.mu.Unlock()

	w := &waiter{lk: lk, h: h, channel: channel, wake: make(chan struct{}, 1)}
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

	w.lk.mu.Lock()
	h.refs--
	if h.refs == 0 {
		w.lk.hub = nil
		_ = h.ps.Close() // ends run
	}
	w.lk.mu.Unlock()
}

func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wakeLocal wakes the Locker's first waiter of a lock it released at once when the lock is
// free, a goroutine hop and a pub/sub delivery sooner than the release message.
func (lk *Locker) wakeLocal(channel string, token int64) {
	lk.mu.Lock()
	h := lk.hub
	lk.mu.Unlock()
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
	defer close(h.done)
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
