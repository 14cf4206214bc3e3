package edge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
)

func TestCallReturnsTheAnswerWithinTheDeadline(t *testing.T) {
	v, err := Call(context.Background(), Caller{Timeout: time.Second}, func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("%d %v", v, err)
	}
	boom := errors.New("boom")
	if _, err := Call(context.Background(), Caller{}, func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("%v, want the call's error", err)
	}
}

func TestCallStopsWaitingAtTheDeadlineButHoldsTheSlotUntilTheCallEnds(t *testing.T) {
	release := make(chan struct{})
	ended := make(chan struct{})
	c := Caller{Timeout: 10 * time.Millisecond, Pending: NewPending(1)}
	_, err := Call(context.Background(), c, func(ctx context.Context) (int, error) {
		defer close(ended)
		<-release
		return 0, ctx.Err() // the call's own context is not cancelled by the deadline
	})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("%v, want ErrTimeout", err)
	}
	if _, err := Call(context.Background(), c, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, ErrShed) {
		t.Fatalf("%v, want ErrShed while the abandoned call holds the only slot", err)
	}
	close(release)
	<-ended
	for c.Pending.Len() != 0 {
		time.Sleep(time.Millisecond) // the release runs right after the call returns
	}
	if v, err := Call(context.Background(), c, func(context.Context) (int, error) { return 1, nil }); v != 1 || err != nil {
		t.Fatalf("%d %v after the slot came back", v, err)
	}
}

func TestCallEndsWithTheRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	block := make(chan struct{})
	defer close(block)
	if _, err := Call(ctx, Caller{Timeout: time.Minute}, func(context.Context) (int, error) { <-block; return 0, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}

type cache struct{ m map[string]int }

func (c *cache) Of(s string) int {
	if k, ok := c.m[s]; ok {
		return k
	}
	return 1
}
func (c *cache) Learn(s string, k int) { c.m[s] = k }
func (c *cache) Forget(s string)       { delete(c.m, s) }

func TestOnUserShardLearnsOnceAndForgetsAGoneShard(t *testing.T) {
	c := &cache{m: map[string]int{}}
	var tried []string
	try := func(answers map[string]ShardAnswer) func(string) (string, ShardAnswer, error) {
		return func(target string) (string, ShardAnswer, error) {
			tried = append(tried, target)
			return target, answers[target], nil
		}
	}
	shard := contract.UserShardID("s1", "u1", 4)
	_, target, err := OnUserShard(c, "s1", "u1", try(map[string]ShardAnswer{"s1": {Sharded: 4}}))
	if err != nil || target != shard || len(tried) != 2 || c.Of("s1") != 4 {
		t.Fatalf("target %s err %v tried %v k %d", target, err, tried, c.Of("s1"))
	}
	tried = nil
	if _, _, err := OnUserShard(c, "s1", "u1", try(nil)); err != nil || len(tried) != 1 || tried[0] != shard {
		t.Fatalf("a known sharded sale: tried %v (%v), want its shard only", tried, err)
	}
	if _, _, err := OnUserShard(c, "s1", "u1", try(map[string]ShardAnswer{shard: {Gone: true}})); err != nil || c.Of("s1") != 1 {
		t.Fatalf("a gone shard: %v, k %d, want forgotten", err, c.Of("s1"))
	}
	if _, _, err := OnUserShard(c, "s1", "u1", try(map[string]ShardAnswer{"s1": {Sharded: 4}, shard: {Sharded: 4}})); !errors.Is(err, ErrShardedShard) {
		t.Fatalf("a shard answering sharded: %v", err)
	}
	c = &cache{m: map[string]int{}}
	if _, _, err := OnUserShard(c, "s2", "u1", try(map[string]ShardAnswer{"s2": {Sharded: contract.MaxShards + 1}})); !errors.Is(err, ErrShardedShard) {
		t.Fatalf("an impossible shard count: %v", err)
	}
}

// BenchmarkCall is the plumbing of one Redis call around an answer that is ready at once:
// the slot, the goroutine, the deadline.
//
//	go test -run '^$' -bench 'Call$' -benchmem -benchtime 2000x ./caddymodule/edge/
func BenchmarkCall(b *testing.B) {
	c := Caller{Timeout: time.Second, Pending: NewPending(DefaultMaxPending)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Call(ctx, c, func(context.Context) (int, error) { return 1, nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// A call that answered holds no slot any more: the request's next call, made at once, is never
// shed by its own previous one (with max_pending 1 the room's GET shed itself on a loaded
// machine: the slot was given back only after the answer, by a goroutine not yet scheduled).
func TestACallThatAnsweredHoldsNoSlot(t *testing.T) {
	c := Caller{Timeout: time.Minute, Pending: NewPending(1)}
	for i := range 2000 {
		if _, err := Call(context.Background(), c, func(context.Context) (int, error) { return i, nil }); err != nil {
			t.Fatalf("call %d: %v, want its answer (the previous call had answered)", i, err)
		}
		if n := c.Pending.Len(); n != 0 {
			t.Fatalf("after call %d answered, %d slots are still held, want 0", i, n)
		}
	}
}
