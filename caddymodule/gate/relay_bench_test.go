//go:build integration

package gate

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/relay"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// BenchmarkRelay measures the relay's own cost per outbox entry: an outbox pre-filled with
// 20 000 entries (what a burst of winners leaves behind) is drained by a relay in this process,
// publishing with confirms to a fresh vhost. It reports entries/s and this process's CPU per
// entry (the relay goroutine, the AMQP reader and go-redis: what the relay takes from a
// gateway's CPU). scripts/bench-gate.sh prints it next to the HTTP figures.
//
// Sub-benchmarks: "corked" is the gateway's setup (the broker's connection, a round's messages
// sent in one write); "uncorked" sends each message with its own write (amqp091-go's default).
func BenchmarkRelay(b *testing.B) {
	for _, corked := range []bool{true, false} {
		name := "corked"
		if !corked {
			name = "uncorked"
		}
		b.Run(name, func(b *testing.B) { benchRelay(b, corked) })
	}
}

func benchRelay(b *testing.B, corked bool) {
	const entries = 20000
	rdb := testenv.Redis(b)
	broker := caddymodule.NewBroker(testenv.RabbitVhost(b), zap.NewNop())
	defer func() { _ = broker.Destruct() }()
	var total int
	var wall, cpu time.Duration
	for i := 0; i < b.N; i++ {
		sale := newSale(b, rdb, entries, -time.Minute, time.Hour)
		ctx := context.Background()
		key := contract.OutboxKey(sale)
		// newSale's preheat made the outbox with the relay's group.
		if g := rdb.XInfoGroups(ctx, key).Val(); len(g) != 1 || g[0].Name != core.RelayGroup {
			b.Fatalf("outbox groups after preheat = %+v", g)
		}
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		pipe := rdb.Pipeline()
		for j := range entries {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"o", uuid.Must(uuid.NewV7()).String(), "u", "u" + strconv.Itoa(j), "t", now}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		o := relay.Options{Redis: rdb, Connect: broker.WaitConnection, Namespace: testNamespace, Config: relay.Config{ServedOnly: true}}
		if corked {
			o.Cork = broker.Cork
		}
		r := relay.New(o)
		r.Notify(sale)
		rctx, cancel := context.WithCancel(ctx)
		cpu0, start := processCPU(), time.Now()
		r.Start(rctx)
		for rdb.XLen(ctx, key).Val() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		wall += time.Since(start)
		cpu += processCPU() - cpu0
		total += entries
		cancel()
		_ = r.Stop()
	}
	b.ReportMetric(float64(total)/wall.Seconds(), "entries/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu-µs/entry")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
