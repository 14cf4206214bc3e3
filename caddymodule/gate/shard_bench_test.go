//go:build integration

package gate

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// BenchmarkHotSaleOnACluster measures purchase decisions per second of ONE hot sale on a
// private 3-master Redis Cluster, unsharded (k=1: every decision on one master) and sharded
// over 3 shards placed on the 3 masters (k=3). Every decision wins (a distinct user each, the
// stock is far above what a run sells), so each one runs the whole script and writes. The
// decisions are sent as the gate sends them in "pooled" mode: one EVALSHA per decision from
// many goroutines. scripts/bench-shard.sh runs it several times and prints medians.
func BenchmarkHotSaleOnACluster(b *testing.B) {
	seeds := testenv.StartRedisCluster(b)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, PoolSize: 128})
	b.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	masters := func(ids []string) int {
		m := map[string]bool{}
		for _, id := range ids {
			c, err := rdb.MasterForKey(ctx, contract.MetaKey(id))
			if err != nil {
				b.Fatal(err)
			}
			m[c.Options().Addr] = true
		}
		return len(m)
	}
	for _, k := range []int{1, 3} {
		b.Run("shards="+strconv.Itoa(k), func(b *testing.B) {
			var sale string
			if k == 1 {
				sale = newSale(b, rdb, 1_000_000_000, -time.Minute, time.Hour)
			} else {
				for range 50 { // a sale whose k shards sit on k different masters
					sale = newShardedSale(b, rdb, 1_000_000_000, k)
					if masters(contract.ShardIDs(sale, k)) == k {
						break
					}
				}
			}
			var n atomic.Int64
			b.SetParallelism(16) // 16 x GOMAXPROCS goroutines: enough decisions in flight for 3 masters
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					user := "b" + strconv.FormatInt(n.Add(1), 10)
					p := core.Purchase{Target: contract.UserShardID(sale, user, k), Request: core.Request{User: user}, OrderID: uuid.Must(uuid.NewV7()).String()}
					v, err := core.Decide(ctx, rdb, p)
					if err != nil || v.Outcome != core.Accepted {
						b.Errorf("decision: %+v %v", v, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
