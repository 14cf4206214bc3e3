//go:build integration

package gate

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// BenchmarkDecisionVariantsVsSingleStock measures the cost of one winning purchase decision
// on a single-stock sale, on a sale with 8 variants and a limit of 1 (a size drop, one pair a
// customer: no held hash, contract.UsesHeld) and on one with 8 variants and a limit of 2
// (buying 1 unit, and 2: the held hash is written) side by side on one private Redis. Every decision wins (a distinct user each, stock far above
// what a run sells), so each runs the whole script and writes.
//
// The machine is shared and noisy, so the cases are not run one after the other: each op is
// one block of 256 decisions of every case in turn (8 goroutines, pooled EVALSHA), and each
// block is measured apart. Reported per case, as the median over the blocks: redis-us/call
// (INFO commandstats usec per evalsha: the script's time inside Redis) and redis-cpu-us/call
// (Redis's own CPU time, INFO cpu, per decision, network included); and the ratios of each
// variants case to the single-stock one. BENCHMARKS.md, "Variants", has the numbers.
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
		sale     string
		usec     []float64
		cpu      []float64
	}{
		{name: "single-stock", limit: 1},
		{name: "variants8-limit1", variants: variants, limit: 1, q: 1},
		{name: "variants8-limit2-q1", variants: variants, limit: 2, q: 1},
		{name: "variants8-limit2-q2", variants: variants, limit: 2, q: 2},
	}
	now := time.Now()
	for i := range cases {
		c := &cases[i]
		c.sale = testenv.ID("s")
		if _, _, err := (lua.PreheatCall{Sale: c.sale, Stock: 1_000_000_000, Starts: now.Add(-time.Minute),
			Ends: now.Add(time.Hour), Retention: time.Hour, Limit: c.limit, Variants: c.variants}).Run(ctx, rdb); err != nil {
			b.Fatal(err)
		}
	}
	const block, workers = 256, 8
	var users atomic.Int64
	b.ResetTimer()
	for range b.N {
		for i := range cases {
			c := &cases[i]
			s0 := redisStats(b, rdb)
			var wg sync.WaitGroup
			var next atomic.Int64
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= block {
						u := users.Add(1)
						p := core.Purchase{Target: c.sale, Request: core.Request{User: "b" + strconv.FormatInt(u, 10)}, OrderID: uuid.Must(uuid.NewV7()).String()}
						if c.variants != nil {
							p.Item = core.Item{Variant: c.variants[u%int64(len(c.variants))].ID, Quantity: c.q}
						}
						if v, err := core.Decide(ctx, rdb, p); err != nil || v.Outcome != core.Accepted {
							b.Errorf("decision: %+v %v", v, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			s1 := redisStats(b, rdb)
			if n := float64(s1.calls - s0.calls); n > 0 {
				c.usec = append(c.usec, (s1.usec-s0.usec)/n)
				c.cpu = append(c.cpu, (s1.cpu-s0.cpu)*1e6/n)
			}
		}
	}
	b.StopTimer()
	base := cases[0]
	for _, c := range cases {
		b.ReportMetric(median(c.usec), c.name+"-redis-us/call")
		b.ReportMetric(median(c.cpu), c.name+"-redis-cpu-us/call")
		if c.name != base.name {
			b.ReportMetric(median(c.usec)/median(base.usec), c.name+"/single-redis-us")
			b.ReportMetric(median(c.cpu)/median(base.cpu), c.name+"/single-redis-cpu")
		}
	}
	for _, c := range cases {
		rdb.Del(ctx, lua.GateCall{Sale: c.sale}.Keys()...)
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

type redisStat struct {
	calls     int64
	usec, cpu float64
}

// redisStats reads INFO's evalsha line (cmdstat_evalsha:calls=N,usec=U,...) and Redis's CPU
// seconds (used_cpu_sys + used_cpu_user).
func redisStats(b *testing.B, rdb *redis.Client) redisStat {
	info, err := rdb.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var s redisStat
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		}
		rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:")
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
