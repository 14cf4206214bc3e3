//go:build integration

package lua

import (
	"context"
	"encoding/binary"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A purchase with two throttle zones (one with bans) in its call, once the sale has sold its
// first unit, is one TIME, the meta read, each zone's log read and written, the buyer (its
// check and write in one HSETNX), the stock and the outbox entry: no second TIME, no ban-hash
// read, no expiry command (an outbox holding entries has none to remove), by gate.lua as by
// gate_common.lua. The sale's first purchase gives the buyers hash the sale's expiry.
func TestACombinedPurchaseRunsOneTimeAndNoExpiryCommand(t *testing.T) {
	srv := testenv.StartRedis(t) // private: its commandstats are this test's alone
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	for _, common := range []bool{false, true} {
		sale := testenv.ID("s")
		now := time.Now()
		if err := rdb.HSet(ctx, contract.MetaKey(sale), "stock", 100, "starts_ms", now.Add(-time.Minute).UnixMilli(),
			"ends_ms", now.Add(time.Hour).UnixMilli(), "state", "open").Err(); err != nil {
			t.Fatal(err)
		}
		metaExp := now.Add(25 * time.Hour).UnixMilli()
		rdb.PExpireAt(ctx, contract.MetaKey(sale), time.UnixMilli(metaExp))

		buy := func(user string) {
			t.Helper()
			c := GateCall{Sale: sale, User: user, OrderID: "o-" + user, Group: "relay", Admission: true}
			keys, args, script := c.AppendKeys(nil), c.AppendArgs(nil), GateThrottled
			if common {
				cc, _ := c.Common()
				keys, args, script = cc.AppendKeys(nil), cc.AppendArgs(nil), GateCommonThrottled
			}
			keys = append(keys, "seckill:rl:{ip:"+user+"}", "seckill:rl:{ip:"+user+"}:ban",
				"seckill:rl:{user:"+user+"}", "seckill:rl:{user:"+user+"}:ban")
			args = append(args, 100, int64(10e6), 0, 1, 0, 5, int64(1e6), 5, 600000, int64(300e6), 2, "01")
			res, err := script.Run(ctx, rdb, keys, args...).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 2 {
				t.Fatalf("%s: reply %v: the zones refused", user, res)
			}
			if d, _ := res[1].([]any); len(d) == 0 || d[0] != int64(0) {
				t.Fatalf("%s: decision %v, want accepted", user, res[1])
			}
		}
		buy("u1")
		if got := rdb.PExpireTime(ctx, contract.BuyersKey(sale)).Val().Milliseconds(); got != metaExp {
			t.Fatalf("common=%v: buyers made by the first purchase expire at %d, want the meta's %d", common, got, metaExp)
		}
		before := testenv.RedisCommands(t, rdb)
		buy("u2")
		after := testenv.RedisCommands(t, rdb)
		got := map[string]int{}
		for k, v := range after {
			if v != before[k] {
				got[k] = v - before[k]
			}
		}
		want := map[string]int{"evalsha": 1, "time": 1, "hmget": 1, "get": 2, "set": 2,
			"hsetnx": 1, "hincrby": 1, "xadd": 1}
		if !maps.Equal(got, want) {
			t.Errorf("common=%v: one purchase ran %v in Redis, want %v", common, got, want)
		}
	}
}

// A ban rides in the compact log: the key stays refused as banned, until the ban's end, by
// the log alone (an admission reads no ban hash), and the ban hash still says it (the
// waiting room reads it there).
func TestABanRidesInTheCompactLog(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	key := "seckill:rl:{user:" + testenv.ID("u") + "}"
	ban := key + ":ban"
	t.Cleanup(func() { rdb.Del(ctx, key, ban) })
	call := func() []any {
		t.Helper()
		// limit 1 per second, banned at the first strike, for a minute.
		v, err := Throttle.Run(ctx, rdb, []string{key, ban}, 1, int64(1e6), 1, 600000, int64(60e6)).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := call(); v[0] != int64(0) {
		t.Fatalf("first call %v, want admitted", v)
	}
	if v := call(); v[0] != int64(2) {
		t.Fatalf("second call %v, want banned (one strike is enough)", v)
	}
	until, err := rdb.HGet(ctx, ban, "banned_until").Int64()
	if err != nil {
		t.Fatalf("the ban hash has no banned_until: %v", err)
	}
	log := rdb.Get(ctx, key).Val()
	if len(log) < 16 {
		t.Fatalf("the log holds %d bytes, want the ban marker and the admission", len(log))
	}
	if first := math.Float64frombits(binary.LittleEndian.Uint64([]byte(log[:8]))); int64(-first) != until {
		t.Errorf("the log's first entry is %v, want -banned_until %d", first, until)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl < 50*time.Second {
		t.Errorf("the log expires in %v: it must outlive the one-minute ban", ttl)
	}
	rdb.Del(ctx, ban)
	v := call()
	if v[0] != int64(2) {
		t.Fatalf("a call with the ban hash gone: %v, want banned by the log", v)
	}
	if retry := v[3].(int64); retry < int64(50e6) || retry > int64(60e6) {
		t.Errorf("retry %d µs, want the ban's remaining minute", retry)
	}
}
