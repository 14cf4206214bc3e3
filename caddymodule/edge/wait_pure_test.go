package edge

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

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
