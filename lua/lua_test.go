//go:build integration

package lua

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestEveryScriptCompilesInRedis(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	for _, name := range Names() {
		if err := redis.NewScript(Source(name)).Load(context.Background(), rdb).Err(); err != nil {
			t.Errorf("%s.lua does not compile: %v", name, err)
		}
	}
	for name, s := range map[string]*redis.Script{"gate": GateThrottled, "gate_common": GateCommonThrottled, "token_issue": TokenIssueThrottled} {
		if err := s.Load(context.Background(), rdb).Err(); err != nil {
			t.Errorf("the zones and %s.lua in one script do not compile: %v", name, err)
		}
	}
}

func TestPreheatIsIdempotentAndNeverResetsASellingSale(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	meta := contract.MetaKey(sale)
	now := time.Now().UnixMilli()
	ends := now + 3_600_000
	run := func(stock int, mode string) []int64 {
		t.Helper()
		res, err := Preheat.Run(ctx, rdb, []string{meta}, sale, stock, now, ends, mode, 60_000).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if got := run(10, "init"); got[0] != 1 || got[1] != 10 {
		t.Fatalf("first preheat = %v, want [1 10]", got)
	}
	rdb.HIncrBy(ctx, meta, "stock", -3) // three units sold
	if got := run(10, "init"); got[0] != 0 || got[1] != 7 {
		t.Fatalf("second preheat = %v, want [0 7]: it must not reset a selling sale", got)
	}
	if got := run(10, "reset"); got[0] != 1 || got[1] != 10 {
		t.Fatalf("reset preheat = %v, want [1 10]", got)
	}
	if ttl := rdb.PTTL(ctx, meta).Val(); ttl <= 0 || ttl > time.Hour+time.Minute {
		t.Fatalf("meta must expire retention after the end, PTTL=%v", ttl)
	}
	old := testenv.ID("s")
	if _, err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(old)}, old, 5, 1000, 2000, "init", 1).Result(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, contract.MetaKey(old)).Val(); n != 0 {
		t.Fatal("a sale that ended long ago must not stay in Redis")
	}
	if _, err := Preheat.Run(ctx, rdb, []string{meta}, sale, -1, 1, 2, "init", 1).Result(); err == nil {
		t.Fatal("negative stock accepted")
	}
}
