package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Lock is one acquisition of a lock. Its methods are safe for concurrent use.
type Lock struct {
	locker   *Locker
	name     string
	lockKey  string
	channel  string
	owner    string
	handle   string
	token    int64
	ttl      time.Duration
	watchdog bool

	mu       sync.Mutex
	deadline time.Time // local, conservative end of the lease: send time of the last renewal + TTL
	released bool

	// renewing is held by the watchdog while it renews and by Release while it releases, so
	// that a renewal never lands after the release and reports a false loss (and Release
	// does not wait for the watchdog goroutine to be scheduled).
	renewing sync.Mutex

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
}

// start launches the goroutine that renews the lease (watchdog) and that closes Lost when the
// lease runs out unrenewed.
func (l *Lock) start(ctx context.Context) *Lock {
	l.lost = make(chan struct{})
	l.stop = make(chan struct{})
	go l.keep(ctx)
	return l
}

func (l *Lock) keep(ctx context.Context) {
	watch := l.watchdog
	nextRenew := time.Now().Add(l.ttl / 3)
	for {
		l.mu.Lock()
		wake := l.deadline
		l.mu.Unlock()
		var ctxDone <-chan struct{}
		if watch {
			ctxDone = ctx.Done()
			if nextRenew.Before(wake) {
				wake = nextRenew
			}
		}
		t := time.NewTimer(time.Until(wake))
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-ctxDone:
			// The holding's context ended: stop renewing; the lease runs out on its own.
			t.Stop()
			watch = false
			continue
		case <-t.C:
		}
		if !l.tick(ctx, watch, &nextRenew) {
			return
		}
	}
}

// tick does what is due at a wake-up of the keeper; false means the keeper is done.
func (l *Lock) tick(ctx context.Context, watch bool, nextRenew *time.Time) bool {
	l.renewing.Lock()
	defer l.renewing.Unlock()
	select {
	case <-l.stop:
		return false
	default:
	}
	now := time.Now()
	l.mu.Lock()
	expired := !now.Before(l.deadline)
	l.mu.Unlock()
	if expired {
		l.markLost()
		return false
	}
	if watch && !now.Before(*nextRenew) {
		err := l.refresh(ctx, l.ttl)
		switch {
		case errors.Is(err, ErrNotHeld):
			return false
		case err != nil:
			// Redis unreachable or slow: retry sooner; the local deadline still closes Lost
			// in time if renewal keeps failing.
			*nextRenew = time.Now().Add(max(l.ttl/10, time.Millisecond))
		default:
			*nextRenew = time.Now().Add(l.ttl / 3)
		}
	}
	return true
}

func (l *Lock) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

// Key returns the name the lock was obtained under (not the Redis key: see Locker.Keys).
func (l *Lock) Key() string { return l.name }

// Owner returns the owner id of this acquisition; pass it to WithOwner or Options.Owner to
// re-enter the lock from nested code.
func (l *Lock) Owner() string { return l.owner }

// Token returns the fencing token of this holding: larger than the token of every earlier
// holding of the same lock name; re-entries share the outer holding's token. Write it with
// every change the lock protects and let the store refuse older ones (CheckFence).
func (l *Lock) Token() int64 { return l.token }

// Lost returns a channel closed when this acquisition is known or presumed to have lost the
// lock: the watchdog (or Refresh, or Release) found it taken or gone, or the lease ran out
// locally without a successful renewal (including after the watchdog stopped because the
// context ended). It is not closed by a successful Release. A holder should stop writing
// when it fires.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Refresh sets the lease of the lock to ttl (the handle's TTL when ttl <= 0), if this
// acquisition still holds it; otherwise it returns ErrNotHeld and closes Lost. A running
// watchdog keeps renewing with the handle's TTL afterwards.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return ErrNotHeld
	}
	if ttl <= 0 {
		ttl = l.ttl
	}
	return l.refresh(ctx, max(ttl, time.Millisecond))
}

func (l *Lock) refresh(ctx context.Context, ttl time.Duration) error {
	sent := time.Now()
	n, err := refreshScript.Run(ctx, l.locker.rdb, []string{l.lockKey},
		l.owner, l.token, l.handle, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("redislock: refresh %q: %w", l.name, err)
	}
	if n != 1 {
		l.markLost()
		return ErrNotHeld
	}
	l.mu.Lock()
	l.deadline = sent.Add(ttl)
	l.mu.Unlock()
	return nil
}

// Release gives this acquisition back. The lock is deleted, and waiters are woken, when no
// other acquisition of the same owner remains (re-entry). It returns ErrNotHeld when this
// acquisition no longer held the lock (and then it touches nothing), or on a second Release.
// After a network error the lease simply runs out: the watchdog has stopped.
func (l *Lock) Release(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	l.renewing.Lock()
	defer l.renewing.Unlock()
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return ErrNotHeld
	}
	n, err := releaseScript.Run(ctx, l.locker.rdb, []string{l.lockKey},
		l.owner, l.token, l.handle, l.channel).Int64()
	if err != nil {
		return fmt.Errorf("redislock: release %q: %w", l.name, err)
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	if n < 0 {
		l.markLost()
		return ErrNotHeld
	}
	if n == 0 {
		l.locker.wakeLocal(l.channel, l.token)
	}
	return nil
}

// String describes the handle for logs.
func (l *Lock) String() string {
	return "redislock(" + l.name + " token " + strconv.FormatInt(l.token, 10) + ")"
}
