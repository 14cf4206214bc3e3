//go:build integration

package invariants_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

// world is a sale state built by hand in real Redis, RabbitMQ and Postgres, the way a drained
// sale would leave it, so that each test can break exactly one invariant. A world has its own
// database (a copy of the migrated template), vhost and sale id, so the tests over one run in
// parallel, except the two that wait on real time (WaitDrained, WaitSettled).
type world struct {
	t      *testing.T
	sale   string
	pg     *pgxpool.Pool
	rdb    *redis.Client
	amqp   string
	vhost  string
	accept []invariants.Accepted
	dead   int
}

func newWorld(t *testing.T, stock int) *world {
	t.Helper()
	ctx := context.Background()
	url := testenv.PostgresFrom(t, backend.SchemaDigest(), backend.Migrate)
	pg, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	w := &world{t: t, sale: testenv.ID("vs"), pg: pg, rdb: testenv.Redis(t), amqp: testenv.RabbitVhost(t)}
	w.vhost = w.amqp[strings.LastIndex(w.amqp, "/")+1:]
	w.exec(`INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ($1, $2, $2, now(), now() + interval '1 hour')`, w.sale, stock)
	w.rdb.HSet(ctx, contract.MetaKey(w.sale), contract.FieldStock, stock, contract.FieldState, "open")
	t.Cleanup(func() {
		w.rdb.Del(context.Background(), contract.MetaKey(w.sale), contract.BuyersKey(w.sale))
	})
	testenv.Topology(t, w.amqp)
	return w
}

func (w *world) exec(sql string, args ...any) {
	w.t.Helper()
	if _, err := w.pg.Exec(context.Background(), sql, args...); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
}

// sell does what the gate and the consumer do for one winner: Redis stock and buyer, the order
// row, Postgres stock, and the 202 the client saw.
func (w *world) sell(user, order string) {
	w.t.Helper()
	ctx := context.Background()
	w.rdb.HIncrBy(ctx, contract.MetaKey(w.sale), contract.FieldStock, -1)
	w.rdb.HSet(ctx, contract.BuyersKey(w.sale), user, order)
	w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ($1, $2, $3, 'created', now())`, order, w.sale, user)
	w.exec(`UPDATE sales SET stock = stock - 1 WHERE id = $1`, w.sale)
	w.accept = append(w.accept, invariants.Accepted{OrderID: order, UserID: user, At: time.Now()})
}

func (w *world) deadLetter(sale, order string) {
	w.t.Helper()
	conn, err := amqp.Dial(w.amqp)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		w.t.Fatal(err)
	}
	body, _ := json.Marshal(contract.OrderMessage{OrderID: order, SaleID: sale, UserID: "u", AcceptedAt: time.Now()})
	if err := ch.PublishWithContext(context.Background(), contract.DeadExchange, "", false, false,
		amqp.Publishing{Body: body, DeliveryMode: amqp.Persistent, ContentType: "application/json"}); err != nil {
		w.t.Fatal(err)
	}
	w.dead++
	mgmt := invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: w.vhost}
	testenv.WaitFor(w.t, 10*time.Second, "the dead letter to be in the queue", func() bool {
		b, err := mgmt.DeadLetters(context.Background())
		return err == nil && len(b) == w.dead
	})
}

func (w *world) verify(demand int) invariants.Report {
	w.t.Helper()
	src := invariants.Sources{Redis: w.rdb, PG: w.pg, Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: w.vhost}}
	rep, err := invariants.Verify(context.Background(), src, invariants.Run{Sale: w.sale, Accepted: w.accept, Demand: demand, CheckRedis: true})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Log("\n" + rep.String())
	return rep
}

// expect asserts exactly the listed invariants fail.
func expect(t *testing.T, rep invariants.Report, failing ...int) {
	t.Helper()
	want := map[int]bool{}
	for _, n := range failing {
		want[n] = true
	}
	if len(rep.Checks) != 5 {
		t.Fatalf("%d checks, want 5", len(rep.Checks))
	}
	for _, c := range rep.Checks {
		if got := c.Verdict == invariants.Fail; got != want[c.N] {
			t.Errorf("invariant %d (%s): %s, want fail=%v: %s", c.N, c.Name, c.Verdict, want[c.N], c.Detail)
		}
	}
	if rep.OK() != (len(failing) == 0) {
		t.Errorf("OK() = %v with failing %v", rep.OK(), failing)
	}
}

func TestVerifierPassesASoldOutSaleThatDrainedCleanly(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	for i := 0; i < 3; i++ {
		w.sell(fmt.Sprintf("u%d", i), fmt.Sprintf("o%d", i))
	}
	expect(t, w.verify(10))
}

func TestVerifierReportsOversell(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	w.sell("u0", "o0")
	w.sell("u1", "o1")
	// A third winner the stock guard did not stop: the row exists, the stock could not go lower.
	w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ('o2', $1, 'u2', 'created', now())`, w.sale)
	w.rdb.HSet(context.Background(), contract.BuyersKey(w.sale), "u2", "o2")
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o2", UserID: "u2", At: time.Now()})
	rep := w.verify(10)
	expect(t, rep, 1, 4)
	if !strings.Contains(rep.Checks[0].Detail, "OVERSELL by 1") {
		t.Errorf("invariant 1 does not name the oversell: %s", rep.Checks[0].Detail)
	}
}

func TestVerifierReportsUndersellWhenDemandExceededSupply(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	w.sell("u1", "o1")
	expect(t, w.verify(10), 1)
	// With only two buyers, two orders out of three units is no undersell.
	expect(t, w.verify(2))
}

func TestVerifierReportsAUserWithTwoOrders(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 5)
	w.sell("u0", "o0")
	// The schema forbids it; a broken schema or a forgotten index must not go unnoticed.
	w.exec(`DROP INDEX IF EXISTS orders_sale_user`)
	w.exec(`DROP INDEX IF EXISTS orders_sale_user_live`)
	w.exec(`DROP INDEX IF EXISTS orders_sale_user_seq_live`)
	w.sell("u0", "o1")
	expect(t, w.verify(1), 2, 4)
}

// Compensation gives a failed order's unit back and forgets the buyer in Redis, so the same
// user may win again with a new order id: one ended order and one live order is not a double sale.
func TestVerifierAcceptsANewOrderAfterTheUsersFailedOne(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.exec(`DROP INDEX IF EXISTS orders_sale_user`) // the schema of migration 001 forbade it
	w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at) VALUES ('o0', $1, 'u0', 'failed', 'refused', now())`, w.sale)
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o0", UserID: "u0", At: time.Now()})
	w.sell("u0", "o1")
	expect(t, w.verify(1))
}

func TestVerifierReportsAUserToldTwoOrderIDs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 5)
	w.sell("u0", "o0")
	// The gate said 202 twice with different ids, though only one became an order.
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o-ghost", UserID: "u0", At: time.Now()})
	rep := w.verify(1)
	expect(t, rep, 2, 3)
}

func TestVerifierReportsALostWinner(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	w.sell("u1", "o1")
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o-lost", UserID: "u2", At: time.Now()})
	rep := w.verify(3)
	expect(t, rep, 3)
	if rep.Checks[2].Numbers["missing"] != 1 {
		t.Errorf("missing = %d, want 1", rep.Checks[2].Numbers["missing"])
	}
}

func TestVerifierAcceptsAFailedOrderOnlyWithAVisibleReason(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	// u1 won at the gate but the database refused; compensation gave the unit back.
	w.exec(`INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ('o1', $1, 'u1', 'failed', now())`, w.sale)
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o1", UserID: "u1", At: time.Now()})
	expect(t, w.verify(2), 3)
	w.exec(`UPDATE orders SET reason = 'stock guard refused' WHERE order_id = 'o1'`)
	expect(t, w.verify(2))

	// The order API must tell the buyer too, when the verifier is given one.
	src := invariants.Sources{Redis: w.rdb, PG: w.pg, Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: w.vhost},
		Orders: func(_ context.Context, id, user string) (invariants.OrderStatus, error) {
			return invariants.OrderStatus{Status: "failed"}, nil // the reason is not shown
		}}
	rep, err := invariants.Verify(context.Background(), src, invariants.Run{Sale: w.sale, Accepted: w.accept, Demand: 2, CheckRedis: true})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, rep, 3)
}

func TestVerifierReportsAnOrderNoClientWasToldAbout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	w.sell("u1", "o1")
	w.accept = w.accept[:1]
	expect(t, w.verify(2), 3)

	// u1 was answered 503 (the gate gave up waiting, its script had run): the order is
	// accounted for, u1 learns of it at the next click.
	src := invariants.Sources{Redis: w.rdb, PG: w.pg, Dead: invariants.RabbitMgmt{URL: testenv.AMQPMgmtURL(), Vhost: w.vhost}}
	rep, err := invariants.Verify(context.Background(), src, invariants.Run{Sale: w.sale, Accepted: w.accept, Demand: 2, CheckRedis: true,
		Uncertain: map[string]bool{"u1": true}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, rep)
	rep, _ = invariants.Verify(context.Background(), src, invariants.Run{Sale: w.sale, Accepted: w.accept, Demand: 2, CheckRedis: true,
		Uncertain: map[string]bool{"u7": true}})
	expect(t, rep, 3)
}

func TestVerifierReportsStockThatIsNotConserved(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	w.exec(`UPDATE sales SET stock = stock - 1 WHERE id = $1`, w.sale) // a unit vanished
	expect(t, w.verify(1), 4)
}

func TestVerifierReportsRedisDisagreeingWithPostgres(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	ctx := context.Background()
	w.rdb.HIncrBy(ctx, contract.MetaKey(w.sale), contract.FieldStock, -1) // Redis lost a unit
	expect(t, w.verify(1), 4)
	w.rdb.HIncrBy(ctx, contract.MetaKey(w.sale), contract.FieldStock, 1)
	w.rdb.HDel(ctx, contract.BuyersKey(w.sale), "u0") // Redis forgot the buyer: u0 could buy again
	expect(t, w.verify(1), 4)
}

func TestVerifierReportsAnUnaccountedDeadLetter(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	w.deadLetter("another-sale", "ox") // not ours: ignored
	expect(t, w.verify(1))
	w.deadLetter(w.sale, "o0") // a duplicate of an order that exists: accounted for
	expect(t, w.verify(1))
	w.deadLetter(w.sale, "o-poison") // nowhere in Postgres
	rep := w.verify(1)
	expect(t, rep, 5)
	if n := rep.Checks[4].Numbers["this_sale"]; n != 2 {
		t.Errorf("dead letters of this sale = %d, want 2", n)
	}
}

// Serial (no t.Parallel): it waits on real time, with deadlines of 100 ms and 1 s.
func TestWaitDrainedMeasuresTheDelayFromAcceptToRow(t *testing.T) {
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	w.sell("u1", "o1")
	d, err := invariants.WaitDrained(context.Background(), w.pg, w.accept, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Settled || d.InPG != 2 || d.Accepted != 2 {
		t.Fatalf("drain %+v, want both settled", d)
	}
	w.accept = append(w.accept, invariants.Accepted{OrderID: "o-never", UserID: "u2", At: time.Now()})
	d, err = invariants.WaitDrained(context.Background(), w.pg, w.accept, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d.Settled || d.InPG != 2 {
		t.Fatalf("drain %+v, want unsettled with 2 of 3", d)
	}
}

// Serial (no t.Parallel): it waits on real time, with deadlines of 100 ms to 10 s.
func TestWaitSettledWaitsForRedisAndPostgresToAgree(t *testing.T) {
	w := newWorld(t, 3)
	w.sell("u0", "o0")
	ctx := context.Background()
	ok, err := invariants.WaitSettled(ctx, w.pg, w.rdb, w.sale, time.Second)
	if err != nil || !ok {
		t.Fatalf("settled %v, %v: Redis and Postgres agree", ok, err)
	}
	w.rdb.HIncrBy(ctx, contract.MetaKey(w.sale), contract.FieldStock, -1) // sold in Redis, not yet in Postgres
	if ok, _ := invariants.WaitSettled(ctx, w.pg, w.rdb, w.sale, 100*time.Millisecond); ok {
		t.Fatal("settled while a unit sold in Redis has no order in Postgres")
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		w.pg.Exec(context.Background(), `UPDATE sales SET stock = stock - 1 WHERE id = $1`, w.sale)
	}()
	if ok, err := invariants.WaitSettled(ctx, w.pg, w.rdb, w.sale, 10*time.Second); !ok || err != nil {
		t.Fatalf("not settled after the consumer caught up: %v", err)
	}
}
