//go:build integration

package redislock

// Side-by-side benchmarks against github.com/bsm/redislock (poll-based waiting, no
// watchdog), on a private redis-server so that other tests' traffic neither slows nor
// inflates the command counts. Driver: scripts/bench-lock.sh; results: BENCHMARKS.md.

import (
	"context"
	"slices"
	"strings"
	"sync"
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

type locker struct {
	name   string
	obtain func(ctx context.Context, key string, wait time.Duration) (release func() error, err error)
}

func lockers(rdb *redis.Client) []locker {
	bc := bsm.New(rdb)
	lk := New(rdb, nil)
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
			l, err := lk.Obtain(ctx, key, &Options{Wait: wait}) // default: 30 s lease + watchdog
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		}},
		{name: "seckill-fixed-ttl", obtain: func(ctx context.Context, key string, wait time.Duration) (func() error, error) {
			l, err := lk.Obtain(ctx, key, &Options{TTL: 30 * time.Second, Wait: wait})
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

// The implementations take turns inside every benchmark iteration, so the machine's noise
// (2 shared cores) hits them alike and their ratio is meaningful. Metrics are per
// implementation: <impl>-µs (median obtain+release), <impl>-handoffs/s, <impl>-wake-µs-p50/p90,
// <impl>-rt/op (client round trips per operation; a script call is one).

type samples struct {
	d  map[string][]time.Duration
	rt map[string]int64
	n  map[string]int64
}

func newSamples() *samples {
	return &samples{d: map[string][]time.Duration{}, rt: map[string]int64{}, n: map[string]int64{}}
}

// measure runs f for implementation name, recording its duration and round trips. Only one
// implementation runs at a time, so the shared round-trip counter attributes correctly.
func (s *samples) measure(name string, ops int64, f func()) time.Duration {
	before := roundTrips.Load()
	t := time.Now()
	f()
	d := time.Since(t)
	s.d[name] = append(s.d[name], d)
	s.rt[name] += roundTrips.Load() - before
	s.n[name] += ops
	return d
}

func (s *samples) quantile(name string, q float64) time.Duration {
	d := slices.Clone(s.d[name])
	slices.Sort(d)
	return d[int(float64(len(d)-1)*q)]
}

func (s *samples) reportRT(b *testing.B) {
	for name, rt := range s.rt {
		b.ReportMetric(float64(rt)/float64(s.n[name]), name+"-rt/op")
	}
}

// BenchmarkUncontendedObtainRelease: take and give back a free lock.
func BenchmarkUncontendedObtainRelease(b *testing.B) {
	rdb := benchRedis(b)
	ctx := context.Background()
	lks := slices.DeleteFunc(lockers(rdb), func(l locker) bool { return strings.HasPrefix(l.name, "bsm-exp") })
	key := testenv.ID("bench")
	s := newSamples()
	for b.Loop() {
		for _, lk := range lks {
			s.measure(lk.name, 1, func() {
				release, err := lk.obtain(ctx, key, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := release(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	for _, lk := range lks {
		b.ReportMetric(float64(s.quantile(lk.name, 0.5).Nanoseconds())/1e3, lk.name+"-µs")
	}
	s.reportRT(b)
}

// BenchmarkContendedHandoff: 8 goroutines fight for one lock; a holding is obtain, a 100 µs
// critical section, release. An iteration gives each implementation a burst of 200 holdings.
func BenchmarkContendedHandoff(b *testing.B) {
	rdb := benchRedis(b)
	ctx := context.Background()
	lks := slices.DeleteFunc(lockers(rdb), func(l locker) bool { return l.name == "seckill-fixed-ttl" })
	const goroutines, each = 8, 25
	key := testenv.ID("bench")
	s := newSamples()
	total := map[string]time.Duration{}
	for b.Loop() {
		for _, lk := range lks {
			total[lk.name] += s.measure(lk.name, goroutines*each, func() {
				var wg sync.WaitGroup
				var failed atomic.Int64
				for range goroutines {
					wg.Go(func() {
						for range each {
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
				}
				wg.Wait()
				if n := failed.Load(); n > 0 {
					b.Fatalf("%s: %d holdings failed", lk.name, n)
				}
			})
		}
	}
	for _, lk := range lks {
		b.ReportMetric(float64(s.n[lk.name])/total[lk.name].Seconds(), lk.name+"-handoffs/s")
	}
	s.reportRT(b)
}

// spin burns d without sleeping (time.Sleep rounds up to the timer tick).
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// BenchmarkWakeUpLatency: a waiter blocks on a held lock for 50 ms; the holder, on another
// client (as if in another process: the release reaches the waiter by pub/sub), releases; the
// metric is the time from the release call to the waiter holding the lock. rt/op counts the
// round trips of the whole cycle, so it shows what 50 ms of waiting costs.
func BenchmarkWakeUpLatency(b *testing.B) {
	rdb := benchRedis(b)
	holderRDB := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, PoolSize: 64})
	holderRDB.AddHook(countHook{})
	b.Cleanup(func() { _ = holderRDB.Close() })
	ctx := context.Background()
	lks := slices.DeleteFunc(lockers(rdb), func(l locker) bool { return l.name == "seckill-fixed-ttl" })
	holders := slices.DeleteFunc(lockers(holderRDB), func(l locker) bool { return l.name == "seckill-fixed-ttl" })
	key := testenv.ID("bench")
	lat := newSamples()
	for b.Loop() {
		for i, lk := range lks {
			before := roundTrips.Load()
			release, err := holders[i].obtain(ctx, key, 0)
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
			if err := g.release(); err != nil {
				b.Fatal(err)
			}
			lat.d[lk.name] = append(lat.d[lk.name], g.at.Sub(released))
			lat.rt[lk.name] += roundTrips.Load() - before
			lat.n[lk.name]++
		}
	}
	for _, lk := range lks {
		b.ReportMetric(float64(lat.quantile(lk.name, 0.5).Nanoseconds())/1e3, lk.name+"-wake-µs-p50")
		b.ReportMetric(float64(lat.quantile(lk.name, 0.9).Nanoseconds())/1e3, lk.name+"-wake-µs-p90")
	}
	lat.reportRT(b)
}
