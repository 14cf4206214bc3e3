// Package edge is the plumbing every seckill handler shares between an HTTP request and
// Redis, with nothing of Caddy or HTTP in it: one deadline per call, load shedding at
// max_pending, sampled warnings, and the "decide on the user's shard" retry of sharded sales.
// The deciding code of the handlers (gate, token, throttle) builds on it and stays testable
// without Caddy, an HTTP server or a clock.
package edge

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrShed is the error of a call that was not sent because max_pending calls were already
// waiting on Redis. The request was never decided: retrying it is always safe.
var ErrShed = errors.New("too many calls waiting on redis (max_pending): shed without a decision")

// ErrTimeout is the error of a call that did not answer before its deadline.
var ErrTimeout = errors.New("redis did not answer within the timeout")

// Caller bounds one handler's calls to Redis: each waits at most Timeout, and at most
// Pending calls are outstanding at once.
type Caller struct {
	Timeout time.Duration // <= 0: wait as long as the request's context allows
	Pending *Pending      // nil: unbounded
	// Inline says that the calls' functions send their commands through a deferred
	// autopipeliner and wait for the answers with Wait (or Script), which stops at the
	// deadline: Call then runs them on the request's own goroutine, without a goroutine,
	// channel or timer of its own. A function that waits any other way would wait past the
	// deadline, so only a store built for it sets this (gate, token, throttle on go-redis's
	// AsyncAutoPipeline).
	Inline bool
}

// Call runs fn and waits for its answer until the request's context ends or the timeout
// passes, whichever is first.
//
// fn gets a context WITHOUT that deadline: neither go-redis client honours a deadline on a
// command already queued (the autopipeliner runs commands on its own context; the pooled
// client discards the connection of a command cancelled mid-flight, and under load that
// turns slow answers into reconnect storms). So fn finishes on the client's own socket
// timeouts, and the request stops waiting at the deadline. Its slot of Pending is held until
// fn returns, because it is exactly those abandoned calls that pile up when Redis is slow.
//
// With c.Inline, fn runs on the caller's goroutine and the deadline is applied where fn waits
// for its command (Wait): the command stays queued and is answered in its batch, the
// request stops waiting, and the slot is held until the command's answer arrives.
//
// A call abandoned at the deadline may still take effect: callers answer "unavailable", never
// "refused", so a retry finds out (the gate's retry answers already_bought with the order).
func Call[T any](ctx context.Context, c Caller, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if c.Inline {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		if !c.Pending.TryAcquire() {
			return zero, ErrShed
		}
		cl := &call{parent: ctx, c: c}
		v, err := fn(cl)
		if !cl.abandoned {
			c.Pending.Release()
		}
		return v, err
	}
	if !c.Pending.TryAcquire() {
		return zero, ErrShed
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	rctx := context.WithoutCancel(ctx)
	go func() {
		// The slot is given back before the answer is handed over, not after: a request that
		// makes its next call as soon as this one answers (the room reads its settings, then
		// its state) must find the slot free, or with max_pending 1 it would shed itself on a
		// loaded machine, where the answering goroutine is descheduled between the two.
		v, err := func() (T, error) {
			defer c.Pending.Release()
			return fn(rctx)
		}()
		done <- result{v, err}
	}()
	if c.Timeout <= 0 {
		select {
		case r := <-done:
			return r.v, r.err
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	// A pooled timer rather than a context.WithTimeout: that is three allocations per call
	// (the context, its timer, its Done channel), on every decision.
	t := timers.Get().(*time.Timer)
	t.Reset(c.Timeout)
	defer func() {
		t.Stop() // since Go 1.23 a stopped timer's channel holds no stale tick: reusable
		timers.Put(t)
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-t.C:
		return zero, ErrTimeout
	}
}

// timers are the stopped timers of finished calls.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}
