// Package redislock is a Redis distributed lock for singleton jobs: an owner token checked on
// every release and renewal, a lease renewed by a watchdog while the holder works, re-entry by
// the same owner, waiting on a pub/sub wake-up instead of spinning, and a fencing token per
// acquisition that the protected resource can check (see CheckFence for Postgres).
//
// Locks are taken through a Locker, made once per Redis by New: it carries the key prefix and
// the wake-up state of its waiting Obtain calls, and needs of the go-redis client only scripts
// and pub/sub (Client). A lock is one Redis hash, <prefix>{<name>} (seckill:lock:{<name>} with
// the default prefix), with the fencing counter <prefix>{<name>}:fence and the release channel
// <prefix>{<name>}:released beside it. All three carry the same hash tag, so the package works
// unchanged on Redis Cluster.
//
// What it does not promise: Redis replicates asynchronously, so a failover can lose a lock and
// let a second holder in while the first still works; a holder can also pause (GC, swap, a
// stopped VM) past its lease. The lock is then only an efficiency device. Safety comes from the
// fencing token: write it with every change and let the store refuse older tokens (CheckFence).
// See docs/lock.md and Kleppmann, "How to do distributed locking" (2016).
package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotObtained is returned by Obtain and TryObtain when the lock is held by another
	// owner and the wait (if any) ran out. When the context ended first, the error also
	// matches the context's error.
	ErrNotObtained = errors.New("redislock: not obtained")
	// ErrNotHeld is returned by Release and Refresh when this acquisition no longer holds the
	// lock: its lease expired (and maybe another owner took it), or it was already released.
	ErrNotHeld = errors.New("redislock: lock not held")
	// ErrInvalidKey is returned for an empty lock name or one containing '{' or '}', which
	// would break the hash tag that keeps a lock's keys in one Cluster slot.
	ErrInvalidKey = errors.New("redislock: invalid lock name")
)

// DefaultTTL is the lease used when Options.TTL is zero; the watchdog then renews it every
// DefaultTTL/3 (Redisson's lockWatchdogTimeout: 30 s, renewed every 10 s).
const DefaultTTL = 30 * time.Second

// FenceRetention is how long the fencing counter key lives after the last acquisition.
// Tokens never depend on it staying: a fresh token is at least Redis's clock in
// microseconds, so a counter that expired (or was lost in a failover) still yields tokens
// larger than every earlier one. See docs/lock.md.
const FenceRetention = 30 * 24 * time.Hour

// DefaultPrefix is the key prefix of a Locker made without one (LockerOptions.Prefix).
const DefaultPrefix = "seckill:lock:"

// Client is what a Locker needs of a go-redis client: its scripts (EVALSHA, EVAL, SCRIPT
// LOAD) and a pub/sub connection for the release wake-up. *redis.Client, *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient all are one, and a test double needs these methods
// only, not a whole client.
type Client interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// LockerOptions tune New. The zero value (or nil) means the prefix DefaultPrefix.
type LockerOptions struct {
	// Prefix starts the Redis name of every lock, fencing counter and release channel:
	// <Prefix>{<name>}. Empty means DefaultPrefix. Lockers with different prefixes on one
	// Redis never see each other's locks. Keep braces out of it: the hash tag must be the
	// lock name's, so that locks spread over a Cluster's slots. The prefix is not part of a
	// fence: CheckFence and Lock.Fence record the bare name, so Lockers that fence into one
	// table must not give one name to two different locks.
	Prefix string
}

// Locker takes locks on one Redis. Make one per Redis client and share it: the waiting
// Obtain calls of a Locker share one pub/sub connection, and a release through it wakes its
// own first waiter at once. That connection (and the goroutine reading it) lives only while
// some Obtain waits, so an idle Locker holds nothing and needs no closing. Its methods are
// safe for concurrent use.
type Locker struct {
	rdb    Client
	prefix string

	mu  sync.Mutex
	hub *hub // the waiters' pub/sub (wake.go); nil while none waits

	// waiting, when set (by tests, before any Obtain), is called each time a waiting Obtain
	// is about to block: it has joined the release channel and its latest attempt failed.
	// Tests await that instead of sleeping.
	waiting func(name string)
}

// New returns a Locker over rdb (nil opt: the defaults, see LockerOptions).
func New(rdb Client, opt *LockerOptions) *Locker {
	lk := &Locker{rdb: rdb, prefix: DefaultPrefix}
	if opt != nil && opt.Prefix != "" {
		lk.prefix = opt.Prefix
	}
	return lk
}

// Options tune Obtain and TryObtain. The zero value (or nil) means: a 30 s lease renewed by
// the watchdog while held, try once, a fresh owner.
type Options struct {
	// TTL is the lease: how long the lock outlives a holder that stops renewing it (a crash).
	// Zero means DefaultTTL with the watchdog on. An explicit TTL is a fixed lease (renew it
	// with Refresh) unless Watchdog is set. Resolution is a millisecond; minimum 1 ms.
	TTL time.Duration
	// Watchdog renews the lease every TTL/3 while the lock is held, until Release or until
	// the context given to Obtain ends. It is always on when TTL is zero; set TTL explicitly
	// and leave Watchdog false for a fixed lease.
	Watchdog bool
	// Wait is how long Obtain waits for a held lock to be released. Zero tries once. While
	// waiting, Obtain sleeps on the lock's release channel (woken within a round trip of the
	// release) and on the holder's remaining lease, polling per Retry only as a fallback.
	Wait time.Duration
	// Retry is the fallback poll schedule while waiting. Nil means
	// ExponentialBackoff(50ms, 2s). NoRetry() relies on the wake-up and lease expiry only.
	Retry RetryStrategy
	// Owner identifies the holder for re-entry: an Obtain by the owner that holds the lock
	// succeeds at once with the holder's fencing token, and the lock is freed only when every
	// such acquisition is released. Empty means the owner carried by the context
	// (WithOwner), else a fresh random owner (no re-entry). An owner is like a thread
	// identity: never share one between goroutines that must exclude each other.
	Owner string
}

func (o *Options) lease() (ttl time.Duration, watchdog bool) {
	if o == nil || o.TTL == 0 {
		return DefaultTTL, true
	}
	if o.TTL < time.Millisecond {
		return time.Millisecond, o.Watchdog
	}
	return o.TTL, o.Watchdog
}

// Keys returns the Redis names of the lock called name: the lock hash, its fencing counter
// and its release channel. They share one hash tag.
func (lk *Locker) Keys(name string) (lock, fence, channel string) {
	base := lk.prefix + "{" + name + "}"
	return base, base + ":fence", base + ":released"
}

func validName(name string) error {
	if name == "" || strings.ContainsAny(name, "{}") {
		return fmt.Errorf("%w: %q", ErrInvalidKey, name)
	}
	return nil
}

// TryObtain tries once to take the lock called key, whatever opt.Wait says. It returns
// ErrNotObtained when another owner holds it.
func (lk *Locker) TryObtain(ctx context.Context, key string, opt *Options) (*Lock, error) {
	return lk.obtain(ctx, key, opt, 0)
}

// Obtain takes the lock called key, waiting up to opt.Wait for it (see Options). The
// watchdog, if on, renews the lease until Release or until ctx ends: ctx is the lifetime of
// the holding, so bound the wait with Options.Wait, not with a short-lived context.
func (lk *Locker) Obtain(ctx context.Context, key string, opt *Options) (*Lock, error) {
	var wait time.Duration
	if opt != nil {
		wait = opt.Wait
	}
	return lk.obtain(ctx, key, opt, wait)
}

func (lk *Locker) obtain(ctx context.Context, name string, opt *Options, wait time.Duration) (*Lock, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	ttl, watchdog := opt.lease()
	owner := ""
	retry := RetryStrategy(nil)
	if opt != nil {
		owner, retry = opt.Owner, opt.Retry
	}
	if owner == "" {
		owner = OwnerFrom(ctx)
	}
	if owner == "" {
		owner = randomID()
	}
	if retry == nil {
		retry = ExponentialBackoff(50*time.Millisecond, 2*time.Second)
	}
	lockKey, fenceKey, channel := lk.Keys(name)
	l := &Lock{locker: lk, name: name, lockKey: lockKey, channel: channel, owner: owner,
		handle: randomID(), ttl: ttl, watchdog: watchdog}

	start := time.Now()
	try := func() (ok bool, pttl time.Duration, err error) {
		sent := time.Now()
		res, err := acquireScript.Run(ctx, lk.rdb, []string{lockKey, fenceKey},
			owner, l.handle, ttl.Milliseconds(), FenceRetention.Milliseconds()).Int64Slice()
		if err != nil {
			return false, 0, fmt.Errorf("redislock: acquire %q: %w", name, err)
		}
		if len(res) != 3 {
			return false, 0, fmt.Errorf("redislock: acquire %q: unexpected reply %v", name, res)
		}
		if res[0] == 1 {
			l.token = res[1]
			l.deadline = sent.Add(time.Duration(res[2]) * time.Millisecond)
			return true, 0, nil
		}
		return false, time.Duration(res[2]) * time.Millisecond, nil
	}

	ok, pttl, err := try()
	if err != nil {
		return nil, err
	}
	if ok {
		return l.start(ctx), nil
	}
	if wait <= 0 {
		return nil, ErrNotObtained
	}

	// Join the channel's waiters before trying again: a release that lands between our
	// failed try and the subscription is then caught by the subscription's confirmation,
	// which also wakes the first waiter.
	w := lk.join(channel)
	defer w.leave()
	deadline := start.Add(wait)
	for attempt := 0; ; attempt++ {
		ok, pttl, err = try()
		if err != nil {
			if ctx.Err() != nil { // the context ended during the attempt
				return nil, fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
			}
			return nil, err
		}
		if ok {
			return l.start(ctx), nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, ErrNotObtained
		}
		sleep := retry(attempt)
		if sleep <= 0 || sleep > left {
			sleep = left
		}
		// The holder's lease ends without a release message when it crashed: look then.
		if pttl > 0 && pttl+time.Millisecond < sleep {
			sleep = pttl + time.Millisecond
		}
		if lk.waiting != nil {
			lk.waiting(name)
		}
		t := time.NewTimer(sleep)
		select {
		case <-w.wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
		t.Stop()
	}
}

// The go-redis clients a program may hold are all a Client.
var (
	_ Client = (*redis.Client)(nil)
	_ Client = (*redis.ClusterClient)(nil)
	_ Client = (*redis.Ring)(nil)
	_ Client = redis.UniversalClient(nil)
)
