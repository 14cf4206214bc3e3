package gate

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// BenchmarkDecisionVariantsVsSingleStock measures the cost of one winning purchase decision
// on a single-stock sale and on a sale with 8 variants and a limit of 2 (buying 1 unit, and
// 2), side by side on one private Redis. Every decision wins (a distinct user each, stock far
// above what a run sells), so each runs the whole script and writes. Besides ns/op (client
// side, 4 x GOMAXPROCS goroutines, pooled EVALSHA) it reports redis-us/call: the script's
// own time in Redis (INFO commandstats usec_per_call of evalsha over the run), which the
// machine's other load disturbs least. BENCHMARKS.md, "Variants", has the numbers.
func BenchmarkDecisionVariantsVsSingleStock(b *testing.B) {
	srv := testenv.StartRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
	b.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	variants := make([]lua.Variant, 8)
	for i := range variants {
		variants[i] = lua.Variant{ID: "size-" + strconv.Itoa(36+i), Stock: 1_000_000_000}
	}
	cases := []struct {
		name     string
		variants []lua.Variant
		limit, q int
	}{
		{"single-stock", nil, 1, 0},
		{"variants-8-limit-2-q1", variants, 2, 1},
		{"variants-8-limit-2-q2", variants, 2, 2},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			sale := testenv.ID("s")
			now := time.Now()
			if _, _, err := lua.RunPreheat(ctx, rdb, lua.PreheatArgs{Sale: sale, Stock: 1_000_000_000, Starts: now.Add(-time.Minute),
				Ends: now.Add(time.Hour), Retention: time.Hour, Limit: c.limit, Variants: c.variants}); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			before := evalshaStats(b, rdb)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					p := Purchase{Sale: sale, User: "b" + strconv.FormatInt(i, 10), OrderID: uuid.Must(uuid.NewV7()).String()}
					if c.variants != nil {
						p.Item = Item{Variant: c.variants[i%int64(len(c.variants))].ID, Quantity: c.q}
					}
					v, err := Decide(ctx, rdb, p)
					if err != nil || v.Outcome != Accepted {
						b.Errorf("decision: %+v %v", v, err)
						return
					}
				}
			})
			b.StopTimer()
			after := evalshaStats(b, rdb)
			if calls := after.calls - before.calls; calls > 0 {
				b.ReportMetric((after.usec-before.usec)/float64(calls), "redis-us/call")
			}
			rdb.Del(ctx, lua.GateCall{Sale: sale}.Keys()...)
		})
	}
}

type cmdStats struct {
	calls int64
	usec  float64
}

// evalshaStats reads INFO commandstats' line of evalsha: cmdstat_evalsha:calls=N,usec=U,...
func evalshaStats(b *testing.B, rdb *redis.Client) cmdStats {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var s cmdStats
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				s.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return s
}
