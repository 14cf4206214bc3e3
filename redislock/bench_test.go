package redislock

// Side-by-side benchmarks against github.com/bsm/redislock (poll-based waiting, no
// watchdog), on a private redis-server so that other tests' traffic neither slows nor
// inflates the command counts. Driver: scripts/bench-lock.sh; results: BENCHMARKS.md.

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
)

// roundTrips counts the commands the benchmark's clients send (a script call is one), which
// is what waiting costs the server; pub/sub connections are not counted (they only receive).
var roundTrips atomic.Int64

type countHook struct{}

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		roundTrips.Add(1)
		return next(ctx, cmd)
	}
}
func (countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func benchRedis(b *testing.B) *redis.Client {
	b.Helper()
	srv := testenv.StartRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
	rdb.AddHook(countHook{})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func commands(*testing.B, *redis.Client) int64 { return roundTrips.Load() }

type locker struct {
	name    string
	obtain  func(ctx context.Context, key string, wait time.Duration) (release func() error, err error)
}

func lockers(rdb *redis.Client) []locker {
	bc := bsm.New(rdb)
	bsmWith := func(name string, retry func() bsm.RetryStrategy) locker {
		return locker{name: name, obtain: func(ctx context.Context, key string, wait time.Duration) (func() error, error) {
			if wait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, wait)
				defer cancel()
			}
			l, err := bc.Obtain(ctx, key, 30*time.Second, &bsm.Options{RetryStrategy: retry()})
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		}}
	}
	return []locker{
		{name: "seckill", obtain: func(ctx context.Context, key string, wait time.Duration) (func() error, error) {
			l, err := Obtain(ctx, rdb, key, &Options{Wait: wait}) // default: 30 s lease + watchdog
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		}},
		{name: "seckill-fixed-ttl", obtain: func(ctx context.Context, key string, wait time.Duration) (func() error, error) {
			l, err := Obtain(ctx, rdb, key, &Options{TTL: 30 * time.Second, Wait: wait})
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		}},
		bsmWith("bsm-linear-1ms", func() bsm.RetryStrategy { return bsm.LinearBackoff(time.Millisecond) }),
		bsmWith("bsm-exp-16ms-256ms", func() bsm.RetryStrategy {
			return bsm.ExponentialBackoff(16*time.Millisecond, 256*time.Millisecond)
		}),
	}
}

// BenchmarkUncontendedObtainRelease: one goroutine takes and gives back a free lock.
func BenchmarkUncontendedObtainRelease(b *testing.B) {
	rdb := benchRedis(b)
	ctx := context.Background()
	for _, lk := range lockers(rdb) {
		if strings.HasPrefix(lk.name, "bsm-exp") {
			continue // same code path as bsm-linear-1ms without contention
		}
		b.Run(lk.name, func(b *testing.B) {
			key := testenv.ID("bench")
			before := commands(b, rdb)
			for b.Loop() {
				release, err := lk.obtain(ctx, key, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := release(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(commands(b, rdb)-before)/float64(b.N), "round-trips/op")
		})
	}
}

// BenchmarkContendedHandoff: 8 goroutines (2 cores x parallelism 4) fight for one lock; an
// op is one holding (obtain, a 100 µs critical section, release). handoffs/s is the rate the
// lock changes hands; redis-cmds/op shows what the waiting costs the server.
func BenchmarkContendedHandoff(b *testing.B) {
	rdb := benchRedis(b)
	ctx := context.Background()
	for _, lk := range lockers(rdb) {
		if lk.name == "seckill-fixed-ttl" {
			continue
		}
		b.Run(lk.name, func(b *testing.B) {
			key := testenv.ID("bench")
			before := commands(b, rdb)
			var failed atomic.Int64
			b.SetParallelism(4)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					release, err := lk.obtain(ctx, key, time.Minute)
					if err != nil {
						failed.Add(1)
						continue
					}
					spin(100 * time.Microsecond)
					if err := release(); err != nil {
						failed.Add(1)
					}
				}
			})
			elapsed := time.Since(start)
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d holdings failed", n, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
			b.ReportMetric(float64(commands(b, rdb)-before)/float64(b.N), "round-trips/op")
		})
	}
}

// spin burns d of CPU-free time without sleeping (time.Sleep rounds up to the timer tick).
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// BenchmarkWakeUpLatency: a waiter blocks on a held lock; the holder releases; the metric is
// the time from the release call to the waiter holding the lock (p50 and p99 over the run).
func BenchmarkWakeUpLatency(b *testing.B) {
	rdb := benchRedis(b)
	ctx := context.Background()
	for _, lk := range lockers(rdb) {
		if lk.name == "seckill-fixed-ttl" {
			continue
		}
		b.Run(lk.name, func(b *testing.B) {
			key := testenv.ID("bench")
			var lat []time.Duration
			before := commands(b, rdb)
			for b.Loop() {
				release, err := lk.obtain(ctx, key, 0)
				if err != nil {
					b.Fatal(err)
				}
				type got struct {
					release func() error
					at      time.Time
					err     error
				}
				ch := make(chan got, 1)
				go func() {
					r, err := lk.obtain(ctx, key, 10*time.Second)
					ch <- got{r, time.Now(), err}
				}()
				time.Sleep(50 * time.Millisecond) // the waiter waits (subscribed / polling)
				released := time.Now()
				if err := release(); err != nil {
					b.Fatal(err)
				}
				g := <-ch
				if g.err != nil {
					b.Fatal(g.err)
				}
				lat = append(lat, g.at.Sub(released))
				if d := g.at.Sub(released); d > 5*time.Millisecond {
					b.Logf("slow wake %v", d)
				}
				if err := g.release(); err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "wake-µs-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "wake-µs-p99")
			b.ReportMetric(float64(commands(b, rdb)-before)/float64(b.N), "round-trips/op")
		})
	}
}
