//go:build integration

package redislock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
)

func TestLockWorksOnARedisCluster(t *testing.T) {
	addrs := testenv.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	// The waiter's own client: a release by rdb reaches it only through pub/sub.
	waiterRDB := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = waiterRDB.Close() })
	lk, waiterLk := New(rdb, nil), New(waiterRDB, nil)
	ctx := context.Background()

	// Several names, so the locks land on different masters; every script touches only
	// same-slot keys (CROSSSLOT would fail otherwise).
	for i := range 6 {
		key := fmt.Sprintf("job-%d", i)
		l, err := lk.Obtain(ctx, key, nil)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if _, err := lk.TryObtain(ctx, key, nil); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("%s: second owner = %v, want ErrNotObtained", key, err)
		}
		inner, err := lk.TryObtain(WithOwner(ctx, l.Owner()), key, nil)
		if err != nil || inner.Token() != l.Token() {
			t.Fatalf("%s: re-entry = %v, %v", key, inner, err)
		}

		// A waiter is woken by the release message, whichever node its subscription uses.
		got := make(chan error, 1)
		var next *Lock
		waiting := onWaiting(t, waiterLk, key)
		go func() {
			var err error
			next, err = waiterLk.Obtain(ctx, key, &Options{Wait: 20 * time.Second, Retry: NoRetry()})
			got <- err
		}()
		awaitWaiting(t, waiting) // subscribed, and its attempt after subscribing failed
		if err := inner.Release(ctx); err != nil {
			t.Fatal(err)
		}
		released := time.Now()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("%s: waiter: %v", key, err)
		}
		if d := time.Since(released); d > 5*time.Second {
			t.Fatalf("%s: waiter woke %v after the release (lease is 30 s: only the message explains a fast wake)", key, d)
		}
		if next.Token() <= l.Token() {
			t.Fatalf("%s: token %d not above %d", key, next.Token(), l.Token())
		}
		if err := next.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Mutual exclusion on the cluster too.
	counter := "counter{job-0}"
	if err := incrementMany(rdb, "job-0", counter, 8, 10); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Get(ctx, counter).Int(); n != 80 {
		t.Fatalf("cluster counter = %d, want 80", n)
	}
}
