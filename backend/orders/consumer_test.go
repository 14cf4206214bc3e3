//go:build integration

package orders_test

import (
	"context"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestConsumerWritesExactlyOneOrderPerWinnerDespiteDuplicatesAndRedeliveries(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	const stock = 10_000
	sale := e.Sale(stock)
	msgs := e.Accept(sale, stock)
	all := servicetest.Bodies(msgs)
	// 5% duplicates: the relay published some entries twice.
	for i := 0; i < stock/20; i++ {
		all = append(all, all[i*20])
	}
	servicetest.Publish(t, e.AMQP, sale, servicetest.Shuffled(all))

	// Redeliveries: a consumer takes 700 messages and dies without acknowledging them.
	conn, err := amqp.Dial(e.AMQP)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	_ = ch.Qos(700, 0, false)
	ds, err := ch.Consume(contract.Queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 700; i++ {
		<-ds
	}
	conn.Close()

	e.StartConsumer(500)
	testenv.WaitFor(t, 50*time.Second, "every winner written", func() bool { return e.Accounted(sale) >= stock })
	testenv.WaitFor(t, 10*time.Second, "the queue drained", func() bool { return servicetest.QueueDepth(t, e.AMQP, contract.Queue) == 0 })
	e.CheckExactlyOnce(sale, msgs, stock)
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, sale); n != stock {
		t.Fatalf("%d created orders, want %d", n, stock)
	}
	if s := e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale); s != 0 {
		t.Fatalf("stock %d, want 0", s)
	}
	if n := e.DBInt(`SELECT count(DISTINCT user_id) FROM orders WHERE sale_id = $1`, sale); n != stock {
		t.Fatalf("%d distinct buyers, want %d", n, stock)
	}
}

func TestStockGuardCreatesWhatFitsFailsTheRestAndReturnsTheirUnitsToRedis(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(100)
	// Redis was wrong: it held 150 units, so the gate accepted 150 buyers.
	ctx := context.Background()
	e.Redis.HSet(ctx, contract.MetaKey(sale), contract.FieldStock, 150)
	msgs := e.Accept(sale, 150)
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(msgs))
	e.StartConsumer(40)

	testenv.WaitFor(t, 30*time.Second, "150 messages accounted", func() bool { return e.Accounted(sale) == 150 })
	e.CheckExactlyOnce(sale, msgs, 100)
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, sale); n != 100 {
		t.Fatalf("%d created, want 100", n)
	}
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'failed' AND reason = $2`, sale, orders.ReasonSoldOutInDB); n != 50 {
		t.Fatalf("%d failed sold_out_in_db, want 50", n)
	}
	testenv.WaitFor(t, 10*time.Second, "50 compensations recorded", func() bool {
		return e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND compensated_at IS NOT NULL`, sale) == 50
	})
	if s := e.RedisStock(sale); s != 50 {
		t.Fatalf("redis stock %d, want 50 (the 50 failed units returned)", s)
	}
	if n := e.Redis.HLen(ctx, contract.BuyersKey(sale)).Val(); n != 100 {
		t.Fatalf("%d buyers in Redis, want 100 (the failed ones removed)", n)
	}
	// Compensation is idempotent per order id: running it again returns nothing.
	rows, _ := e.Pool.Query(ctx, `SELECT order_id, sale_id, user_id FROM orders WHERE sale_id = $1 AND status = 'failed'`, sale)
	var refs []orders.OrderRef
	for rows.Next() {
		var r orders.OrderRef
		_ = rows.Scan(&r.OrderID, &r.SaleID, &r.UserID)
		refs = append(refs, r)
	}
	if n := e.Svc.Compensator.Compensate(ctx, refs); n != 0 || e.RedisStock(sale) != 50 {
		t.Fatalf("second compensation returned %d units, redis stock %d", n, e.RedisStock(sale))
	}
}

func TestMalformedAndUnknownSaleMessagesAreDeadLetteredWithoutBlockingTheQueue(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(10)
	msgs := e.Accept(sale, 5)
	stray := contract.OrderMessage{OrderID: "o-unknown", SaleID: testenv.ID("nosuch"), UserID: "u1", AcceptedAt: time.Now()}
	all := [][]byte{[]byte("not json"), []byte(`{"order_id":"x"}`)}
	all = append(all, servicetest.Bodies([]contract.OrderMessage{stray})...)
	all = append(all, servicetest.Bodies(msgs)...)
	servicetest.Publish(t, e.AMQP, sale, all)
	e.StartConsumer(100)
	testenv.WaitFor(t, 20*time.Second, "the good messages written", func() bool { return e.Accounted(sale) == 5 })
	testenv.WaitFor(t, 10*time.Second, "three messages dead-lettered", func() bool {
		return servicetest.QueueDepth(t, e.AMQP, contract.DeadQueue) == 3
	})
	testenv.WaitFor(t, 5*time.Second, "the queue drained", func() bool { return servicetest.QueueDepth(t, e.AMQP, contract.Queue) == 0 })
}

func TestConcurrentBatchWritersNeverOversellNorDuplicate(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(100)
	msgs := e.Accept(sale, 300)
	w := &orders.Writer{Pool: e.Pool}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]bool{}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := servicetest.Shuffled(msgs)
			for i := 0; i < len(mine); i += 50 {
				for {
					res, err := w.WriteBatch(context.Background(), mine[i:i+50])
					if err == nil {
						mu.Lock()
						for _, f := range res.Failed {
							if failed[f.OrderID] {
								t.Errorf("order %s reported failed twice", f.OrderID)
							}
							failed[f.OrderID] = true
						}
						mu.Unlock()
						break
					}
					if !orders.Transient(err) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	e.CheckExactlyOnce(sale, msgs, 100)
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, sale); n != 100 {
		t.Fatalf("%d created, want 100", n)
	}
	if len(failed) != 200 {
		t.Fatalf("%d failed orders reported for compensation, want 200", len(failed))
	}
}

func TestShutdownWritesAndAcknowledgesTheBatchInHand(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(10)
	msgs := e.Accept(sale, 10)
	// The sale's row is locked: the first batch's transaction waits for it, so the one writer
	// stays busy and what arrives next is gathered for a minute (the window) in the consumer's
	// hand.
	ctx := context.Background()
	lock, err := e.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `SELECT 1 FROM sales WHERE id = $1 FOR UPDATE`, sale); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	c := &orders.Consumer{URL: e.AMQP, Writer: &orders.Writer{Pool: e.Pool}, BatchSize: 1000, BatchWait: time.Minute,
		Writers: 1, Log: servicetest.QuietLog()}
	go func() { defer close(done); _ = c.Run(cctx) }()
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(msgs[:1]))
	testenv.WaitFor(t, 10*time.Second, "the first batch waiting for the sale's row", func() bool {
		return e.DBInt(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 1
	})
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(msgs[1:]))
	testenv.WaitFor(t, 10*time.Second, "the messages delivered to the consumer", func() bool {
		return servicetest.QueueDepth(t, e.AMQP, contract.Queue) == 0
	})
	if n := e.Accounted(sale); n != 0 {
		t.Fatalf("%d orders written before the batch closed", n)
	}
	cancel()
	// The shutdown waits for the writer (within its grace), then writes the batch in hand.
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the consumer did not stop")
	}
	if n := e.Accounted(sale); n != 10 {
		t.Fatalf("%d of 10 orders written at shutdown", n)
	}
	// Acknowledged: nothing comes back to the queue once the broker has seen the consumer go
	// (an unacknowledged delivery is returned in the same step that removes the consumer).
	var ready int
	testenv.WaitFor(t, 10*time.Second, "the broker to drop the stopped consumer", func() bool {
		var consumers int
		ready, consumers = servicetest.QueueStat(t, e.AMQP, contract.Queue)
		return consumers == 0
	})
	if ready != 0 {
		t.Fatalf("%d messages returned to the queue: the batch was not acknowledged", ready)
	}
}
