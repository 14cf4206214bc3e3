package edge

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
)

// future is a Future answered when its test closes answer (or at once, when it is nil).
type future struct {
	answer chan struct{}
	err    error
	waited atomic.Int32
}

func (f *future) Wait() error {
	if f.answer != nil {
		<-f.answer
	}
	return f.err
}

func (f *future) WaitContext(ctx context.Context) error {
	f.waited.Add(1)
	if f.answer == nil {
		return f.err
	}
	select {
	case <-f.answer:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestAnInlineCallWaitsOnTheRequestsGoroutineAndGivesTheSlotBack(t *testing.T) {
	c := Caller{Timeout: time.Second, Pending: NewPending(1), Inline: true}
	boom := errors.New("boom")
	for i := range 100 {
		f := &future{err: boom}
		_, err := Call(context.Background(), c, func(ctx context.Context) (int, error) {
			return i, Wait(ctx, f)
		})
		if !errors.Is(err, boom) || f.waited.Load() != 1 {
			t.Fatalf("call %d: %v (waited %d), want the command's error after one wait", i, err, f.waited.Load())
		}
		if n := c.Pending.Len(); n != 0 {
			t.Fatalf("after call %d answered, %d slots are still held, want 0", i, n)
		}
	}
}

func TestAnInlineCallStopsWaitingAtTheDeadlineButHoldsTheSlotUntilTheCommandIsAnswered(t *testing.T) {
	c := Caller{Timeout: 10 * time.Millisecond, Pending: NewPending(1), Inline: true}
	f := &future{answer: make(chan struct{})}
	var inside context.Context
	_, err := Call(context.Background(), c, func(ctx context.Context) (int, error) {
		inside = ctx
		return 0, Wait(ctx, f)
	})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("%v, want ErrTimeout", err)
	}
	if inside.Err() != nil || inside.Done() != nil {
		t.Fatal("the call's own context must not end at the deadline (the command is never cut off)")
	}
	if _, err := Call(context.Background(), c, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, ErrShed) {
		t.Fatalf("%v, want ErrShed while the abandoned command holds the only slot", err)
	}
	close(f.answer)
	testenv.WaitFor(t, 5*time.Second, "the slot given back once the command was answered", func() bool { return c.Pending.Len() == 0 })
	if v, err := Call(context.Background(), c, func(context.Context) (int, error) { return 1, nil }); v != 1 || err != nil {
		t.Fatalf("%d %v after the slot came back", v, err)
	}
}

func TestAnInlineCallEndsAtTheRequestsOwnEarlierDeadline(t *testing.T) {
	c := Caller{Timeout: time.Minute, Pending: NewPending(4), Inline: true}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f := &future{answer: make(chan struct{})}
	defer close(f.answer)
	done := make(chan error, 1)
	go func() {
		_, err := Call(ctx, c, func(ctx context.Context) (int, error) { return 0, Wait(ctx, f) })
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("%v, want ErrTimeout at the request's deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call waited past the request's deadline (the caller's timeout is a minute)")
	}
}

func TestAnInlineCallOfARequestAlreadyGoneSendsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := Caller{Timeout: time.Second, Pending: NewPending(1), Inline: true}
	ran := false
	if _, err := Call(ctx, c, func(context.Context) (int, error) { ran = true; return 0, nil }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("%v (ran %v), want context.Canceled without running", err, ran)
	}
	if c.Pending.Len() != 0 {
		t.Fatal("a call never made holds a slot")
	}
}

func TestAnInlineCallKeepsTheRequestsValues(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	c := Caller{Timeout: time.Second, Inline: true}
	v, _ := Call(ctx, c, func(ctx context.Context) (any, error) { return ctx.Value(key{}), nil })
	if v != "v" {
		t.Fatalf("%v, want the request's value", v)
	}
}

// Script on a real Redis through go-redis's deferred autopipeliner: a script Redis does not
// know yet is loaded and run once; a Redis that does not answer in time (CLIENT PAUSE) is a
// timeout, whose slot comes back when the command is answered, and the command did run.
func TestScriptRunsOnRedisAndTimesOutWithoutLosingTheCommand(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.StartRedis(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ap, err := rdb.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := testenv.ID("edge-script")
	incr := redis.NewScript(`return redis.call("INCR", KEYS[1]) + tonumber(ARGV[1])`)
	c := Caller{Timeout: 200 * time.Millisecond, Pending: NewPending(1), Inline: true}
	run := func() (int64, error) {
		return Call(ctx, c, func(ctx context.Context) (int64, error) {
			return Script(ctx, ap, incr, []string{key}, 100).Int64()
		})
	}
	if v, err := run(); v != 101 || err != nil {
		t.Fatalf("first run (NOSCRIPT, then loaded): %d %v, want 101", v, err)
	}
	if v, err := run(); v != 102 || err != nil {
		t.Fatalf("second run: %d %v, want 102", v, err)
	}
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "1000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := run(); !errors.Is(err, ErrTimeout) {
		t.Fatalf("%v, want ErrTimeout while Redis is paused", err)
	}
	if c.Pending.Len() != 1 {
		t.Fatalf("%d slots held while the abandoned command waits in Redis, want 1", c.Pending.Len())
	}
	testenv.WaitFor(t, 10*time.Second, "the slot given back when Redis answered", func() bool { return c.Pending.Len() == 0 })
	if n, err := rdb.Get(ctx, key).Int(); n != 3 || err != nil {
		t.Fatalf("counter %d %v, want 3: the abandoned command still ran", n, err)
	}
}

// BenchmarkInlineCall is BenchmarkCall's plumbing for an inline call: the slot, the call's
// context, the pooled deadline; no goroutine, channel or timer of its own.
//
//	go test -run '^$' -bench 'Call$' -benchmem -benchtime 2000x ./caddymodule/edge/
func BenchmarkInlineCall(b *testing.B) {
	c := Caller{Timeout: time.Second, Pending: NewPending(DefaultMaxPending), Inline: true}
	ctx := context.Background()
	f := &future{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Call(ctx, c, func(ctx context.Context) (int, error) { return 1, Wait(ctx, f) }); err != nil {
			b.Fatal(err)
		}
	}
}
