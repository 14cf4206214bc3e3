//go:build integration

package edge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
)

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
