//go:build integration

package orders_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
)

// Benchmarks of the order writer: the batched writer (one transaction per 500 orders) against
// one order per transaction, the classic design. Each reports orders/s; scripts/bench-backend.sh
// runs them side by side, three times, and writes the medians to BENCHMARKS.md.
//
//	BenchmarkWriter:   WriteBatch straight from memory (the database part alone)
//	BenchmarkConsumer: 40 000 messages pre-published to RabbitMQ, then consumed and written (end to end)

func benchOrders(e *servicetest.Env, n int) (string, []contract.OrderMessage) {
	sale := e.Sale(n)
	return sale, e.Accept(sale, n)
}

func BenchmarkWriter(b *testing.B) {
	for _, c := range []struct {
		name   string
		batch  int
		orders int
	}{{"batched-500", 500, 20000}, {"one-per-tx", 1, 1000}} {
		b.Run(c.name, func(b *testing.B) {
			e := servicetest.New(b)
			w := &orders.Writer{Pool: e.Pool}
			ctx := context.Background()
			var total int
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				_, msgs := benchOrders(e, c.orders)
				start := time.Now()
				for j := 0; j < len(msgs); j += c.batch {
					if _, err := w.WriteBatch(ctx, msgs[j:min(j+c.batch, len(msgs))]); err != nil {
						b.Fatal(err)
					}
				}
				elapsed += time.Since(start)
				total += len(msgs)
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "orders/s")
		})
	}
}

func BenchmarkConsumer(b *testing.B) {
	// The queue is filled before the consumer starts, so the publisher takes no CPU from the
	// measured drain. one-per-tx is the classic consumer: one writer, one order per transaction.
	for _, c := range []struct {
		name    string
		batch   int
		writers int
		orders  int
	}{{"batched-500", 500, 0, 40000}, {"one-per-tx", 1, 1, 1000}} {
		b.Run(c.name, func(b *testing.B) {
			e := servicetest.New(b)
			var total int
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				sale, msgs := benchOrders(e, c.orders)
				servicetest.Publish(b, e.AMQP, sale, servicetest.Bodies(msgs))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				cons := &orders.Consumer{URL: e.AMQP, Writer: &orders.Writer{Pool: e.Pool}, Compensator: e.Svc.Compensator,
					BatchSize: c.batch, BatchWait: 20 * time.Millisecond, Writers: c.writers, Log: servicetest.QuietLog()}
				go func() { defer close(done); _ = cons.Run(ctx) }()
				// Steady state: the clock starts at the first commit seen (connecting and the
				// first fill are not the writer's speed) and stops when every unit is sold (stock
				// 0 means every message written). Polling reads one row by primary key.
				stock := func() int { return e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale) }
				deadline := time.Now().Add(2 * time.Minute)
				wait := func(cond func(int) bool) int {
					for {
						if s := stock(); cond(s) {
							return s
						}
						if time.Now().After(deadline) {
							b.Fatal(fmt.Sprintf("consumer wrote %d of %d in 2 minutes", e.Accounted(sale), len(msgs)))
						}
						time.Sleep(2 * time.Millisecond)
					}
				}
				left := wait(func(s int) bool { return s < len(msgs) })
				start := time.Now()
				wait(func(s int) bool { return s == 0 })
				elapsed += time.Since(start)
				total += left
				cancel()
				<-done
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "orders/s")
		})
	}
}
