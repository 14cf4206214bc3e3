//go:build integration

package redislock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckilledge/seckill/internal/testenv"
)

// The prefix option names every key of a lock, and two prefixes are two separate sets of
// locks on one Redis; without the option the keys are the ones the backend has always used.
func TestThePrefixOptionNamesTheLocksKeys(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	name := testenv.ID("lk")
	custom := New(rdb, &LockerOptions{Prefix: "seckill:test:locks:"})
	plain := New(rdb, nil)
	lock, fence, channel := custom.Keys(name)
	if want := "seckill:test:locks:{" + name + "}"; lock != want || fence != want+":fence" || channel != want+":released" {
		t.Fatalf("keys with the prefix = %s %s %s", lock, fence, channel)
	}
	plainLock, plainFence, _ := plain.Keys(name)
	if want := "seckill:lock:{" + name + "}"; plainLock != want || plainFence != want+":fence" {
		t.Fatalf("keys without a prefix = %s %s, want the default seckill:lock:", plainLock, plainFence)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), lock, fence, plainLock, plainFence) })

	l, err := custom.TryObtain(ctx, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, lock, fence).Val(); n != 2 {
		t.Fatalf("%d of the prefixed lock and fence keys exist, want 2", n)
	}
	if n := rdb.Exists(ctx, plainLock).Val(); n != 0 {
		t.Fatal("a prefixed lock wrote the default-prefix key")
	}
	// Same name, other prefix: another lock, free.
	other, err := plain.TryObtain(ctx, name, nil)
	if err != nil {
		t.Fatalf("the same name under the default prefix = %v, want a free lock", err)
	}
	if _, err := custom.TryObtain(ctx, name, nil); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("a second owner under the prefix = %v, want ErrNotObtained", err)
	}
	for _, h := range []*Lock{l, other} {
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.Exists(ctx, lock).Val(); n != 0 {
		t.Fatal("the prefixed lock outlived its release")
	}
}

// Each Locker keeps its own waiters: a waiter on one Locker does not open pub/sub on
// another, a release through the other reaches it as between processes (by the release
// message), and once the waiter is served its Locker holds no connection and no goroutine.
func TestTwoLockersOnOneRedisKeepTheirOwnWakeUpState(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	name := testenv.ID("lk")
	a, b := New(rdb, nil), New(rdb, nil)
	holder, err := b.Obtain(ctx, name, nil) // 30 s lease: only the release explains a fast wake-up
	if err != nil {
		t.Fatal(err)
	}
	waiting := onWaiting(t, a, name)
	type result struct {
		l   *Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := a.Obtain(ctx, name, &Options{Wait: 20 * time.Second, Retry: NoRetry()})
		got <- result{l, err}
	}()
	awaitWaiting(t, waiting)
	hubOf := func(lk *Locker) *hub {
		lk.mu.Lock()
		defer lk.mu.Unlock()
		return lk.hub
	}
	h := hubOf(a)
	if h == nil {
		t.Fatal("a waiting Obtain has no hub on its own Locker")
	}
	if hubOf(b) != nil {
		t.Fatal("a waiter on one Locker opened pub/sub on another")
	}
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if d := time.Since(released); d > 2*time.Second {
		t.Fatalf("waiter obtained %v after the other Locker's release: not woken by the release message", d)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if hubOf(a) != nil {
		t.Fatal("the Locker kept its hub after its last waiter left")
	}
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the hub's goroutine outlived the Locker's last waiter")
	}
}
