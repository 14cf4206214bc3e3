//go:build integration

package orders_test

import (
	"context"
	"errors"
	"testing"

	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestUnpaidOrdersAreCancelledAndTheirUnitsReturnToRedisForANewBuyer(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(10)
	msgs := e.Accept(sale, 3)
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	_, srv := e.Servers(false)
	var paid orders.PaidResult
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/shop/orders/"+msgs[2].OrderID+"/paid", servicetest.ShopAuth, "", &paid); code != 200 || paid.Status != "paid" {
		t.Fatalf("pay: %d %+v", code, paid)
	}
	// Two orders are past the payment window; the paid one is too, but it is paid.
	if _, err := e.Pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE sale_id = $1`, sale); err != nil {
		t.Fatal(err)
	}
	n, err := e.Svc.Sweeper.SweepOnce(ctx)
	if err != nil || n != 2 {
		t.Fatalf("SweepOnce = %d, %v; want 2 released", n, err)
	}
	if got := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'cancelled' AND reason = $2 AND compensated_at IS NOT NULL`, sale, orders.ReasonPaymentTimeout); got != 2 {
		t.Fatalf("%d compensated cancelled orders, want 2", got)
	}
	if s := e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale); s != 9 {
		t.Fatalf("postgres stock %d, want 9", s)
	}
	if s := e.RedisStock(sale); s != 9 {
		t.Fatalf("redis stock %d, want 9", s)
	}
	for i, m := range msgs {
		has := e.Redis.HExists(ctx, contract.BuyersKey(sale), m.UserID).Val()
		if has != (i == 2) {
			t.Fatalf("buyer %d in Redis = %v: the cancelled buyers must be gone, the payer kept", i, has)
		}
	}
	// A cancelled order cannot be paid any more.
	var ref struct{ Code string }
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/shop/orders/"+msgs[0].OrderID+"/paid", servicetest.ShopAuth, "", &ref); code != 409 || ref.Code != contract.CodeNotPayable {
		t.Fatalf("pay of a cancelled order: %d %+v", code, ref)
	}
	// Sweeping again changes nothing.
	if n, err := e.Svc.Sweeper.SweepOnce(ctx); err != nil || n != 0 || e.RedisStock(sale) != 9 {
		t.Fatalf("second sweep: %d, %v, redis stock %d", n, err, e.RedisStock(sale))
	}
}

func TestOnlyTheSweeperLockHolderSweeps(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(5)
	msgs := e.Accept(sale, 2)
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	_, _ = e.Pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE sale_id = $1`, sale)
	other, err := lock.NewLocker(e.Redis, 5e9).TryObtain(ctx, e.Svc.Sweeper.Lock)
	if err != nil {
		t.Fatalf("could not take the sweeper lock for the test: %v", err)
	}
	if n, err := e.Svc.Sweeper.SweepOnce(ctx); err != nil || n != 0 {
		t.Fatalf("a sweeper without the lock released %d (%v)", n, err)
	}
	if got := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'created'`, sale); got != 2 {
		t.Fatalf("%d created orders left, want 2", got)
	}
	_ = other.Release(ctx)
	if n, err := e.Svc.Sweeper.SweepOnce(ctx); err != nil || n < 2 {
		t.Fatalf("the lock holder released %d (%v), want 2", n, err)
	}
}

func TestAStaleFencingTokenCannotWrite(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	write := func(token int64) error {
		return pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error { return lock.CheckFence(ctx, tx, "k", token) })
	}
	if err := write(5); err != nil {
		t.Fatal(err)
	}
	if err := write(5); err != nil {
		t.Fatalf("the same holder writing again was refused: %v", err)
	}
	if err := write(7); err != nil {
		t.Fatal(err)
	}
	if err := write(6); !errors.Is(err, lock.ErrFenced) {
		t.Fatalf("token 6 after 7: %v, want lock.ErrFenced", err)
	}
}

func TestABuyerWhoseOrderWasCancelledCanBuyAgainThroughTheGate(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(3)
	first := e.Accept(sale, 1)[0]
	w := &orders.Writer{Pool: e.Pool}
	if _, err := w.WriteBatch(ctx, []contract.OrderMessage{first}); err != nil {
		t.Fatal(err)
	}
	_, _ = e.Pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE sale_id = $1`, sale)
	if n, err := e.Svc.Sweeper.SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if e.Redis.HExists(ctx, contract.BuyersKey(sale), first.UserID).Val() || e.RedisStock(sale) != 3 {
		t.Fatalf("after the release: buyer still there or redis stock %d != 3", e.RedisStock(sale))
	}
	// The gate accepts the same user again, with a new order id.
	again := e.Accept(sale, 1)[0]
	again.UserID = first.UserID
	e.Redis.HDel(ctx, contract.BuyersKey(sale), e.Redis.HKeys(ctx, contract.BuyersKey(sale)).Val()...)
	e.Redis.HSet(ctx, contract.BuyersKey(sale), first.UserID, again.OrderID)
	res, err := w.WriteBatch(ctx, []contract.OrderMessage{again, again})
	if err != nil || res.Created != 1 {
		t.Fatalf("second purchase: %+v %v", res, err)
	}
	var st1, st2 string
	_ = e.Pool.QueryRow(ctx, `SELECT status FROM orders WHERE order_id = $1`, first.OrderID).Scan(&st1)
	_ = e.Pool.QueryRow(ctx, `SELECT status FROM orders WHERE order_id = $1`, again.OrderID).Scan(&st2)
	if st1 != contract.StatusCancelled || st2 != contract.StatusCreated {
		t.Fatalf("orders are %s and %s, want cancelled and created", st1, st2)
	}
	if s := e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale); s != 2 {
		t.Fatalf("postgres stock %d, want 2", s)
	}
	// Still only one live order per user: a third order id for the same user changes nothing.
	third := again
	third.OrderID = e.Accept(sale, 1)[0].OrderID
	if res, err := w.WriteBatch(ctx, []contract.OrderMessage{third}); err != nil || res.Created != 0 {
		t.Fatalf("a second live order for the same user: %+v %v", res, err)
	}
}

// Serial (no t.Parallel): it kills its private Redis and waits for the compensation to be
// postponed and done again on real time.
func TestCompensationPostponedWhileRedisIsDownIsDoneOnceItIsBack(t *testing.T) {
	e := servicetest.New(t)
	r := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	e.Redis, e.Svc.Compensator.Redis = rdb, rdb
	e.Rebuild(func(o *backend.Options) { o.Redis, o.Locker = rdb, lock.NewLocker(rdb, 5*time.Second) })
	ctx := context.Background()
	sale := e.Sale(1)
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldStock, 3) // Redis was wrong
	msgs := e.Accept(sale, 3)

	r.Stop()
	res, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, msgs)
	if err != nil || len(res.Failed) != 2 {
		t.Fatalf("write: %+v %v", res, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if n := e.Svc.Compensator.Compensate(cctx, res.Failed); n != 0 {
		t.Fatalf("compensated %d units with Redis down", n)
	}
	cancel()
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'failed' AND compensated_at IS NULL`, sale); n != 2 {
		t.Fatalf("%d failed orders pending compensation, want 2", n)
	}

	r.Start()
	if _, err := e.Svc.Sweeper.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND compensated_at IS NULL AND status = 'failed'`, sale); n != 0 {
		t.Fatalf("%d compensations still pending after Redis came back", n)
	}
	if s := e.RedisStock(sale); s != 2 {
		t.Fatalf("redis stock %d, want 2 (0 after three sales, + the two failed units)", s)
	}
	if n := rdb.HLen(ctx, contract.BuyersKey(sale)).Val(); n != 1 {
		t.Fatalf("%d buyers in Redis, want 1", n)
	}
}
