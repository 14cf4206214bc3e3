package throttle

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/throttle/core"
)

// The handler's tests share these with the core's (core/plan_test.go, core/tiers_test.go,
// core/limiter_compact_test.go): copies, so neither package's tests import the other's.

var t0 = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

// fakeStore is the exact tier in memory: a fixed reply per counter key (default admitted),
// recording every round trip.
type fakeStore struct {
	mu      sync.Mutex
	replies map[string]core.Reply
	trips   [][]core.Call
}

func (s *fakeStore) Eval(_ context.Context, calls []core.Call) ([]core.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trips = append(s.trips, calls)
	out := make([]core.Reply, len(calls))
	for i, c := range calls {
		r, ok := s.replies[c.Key]
		if !ok {
			r = core.Reply{Status: 0, Remaining: 5, Reset: time.Second, Member: "1700000000000000-0"}
		}
		out[i] = r
	}
	return out, nil
}

func (s *fakeStore) Undo(context.Context, []core.Refund) error { return nil }

// logLen is the number of admissions a zone's log holds, in either form (lua/throttle.lua):
// a compact string of 8-byte timestamps or a sorted set.
func logLen(t testing.TB, rdb redis.Cmdable, key string) int64 {
	t.Helper()
	ctx := context.Background()
	switch kind := rdb.Type(ctx, key).Val(); kind {
	case "none":
		return 0
	case "string":
		return int64(len(rdb.Get(ctx, key).Val()) / 8)
	case "zset":
		return rdb.ZCard(ctx, key).Val()
	default:
		t.Fatalf("%s is a %s", key, kind)
		return 0
	}
}
