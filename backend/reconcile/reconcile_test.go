//go:build integration

package reconcile_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

func TestReconcileRepairsABrokenRedisAndReportsWhatItDid(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(20)
	msgs := e.Accept(sale, 5)
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	// One purchase in flight (accepted a moment ago, not written yet): it must be left alone.
	inflight := e.Accept(sale, 1)[0]
	// A buyer accepted two hours ago whose message never arrived.
	ghostID := backendtest.OrderIDAt(t, time.Now().Add(-2*time.Hour))
	e.Redis.HIncrBy(ctx, contract.MetaKey(sale), contract.FieldStock, -1)
	e.Redis.HSet(ctx, contract.BuyersKey(sale), "ghost", ghostID)
	// Break it: a buyer with an order forgotten, and a wrong stock.
	e.Redis.HDel(ctx, contract.BuyersKey(sale), msgs[0].UserID)
	e.Redis.HSet(ctx, contract.MetaKey(sale), contract.FieldStock, 18)

	srv := httptest.NewServer(e.Svc.Handler(backend.NewMetricsRegistry(), false))
	defer srv.Close()
	auth := servicetest.AdminAuth
	var rep admin.ReconcileReport
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/reconcile", auth, "", &rep); code != 200 {
		t.Fatalf("reconcile: %d", code)
	}
	t.Logf("report: %+v", rep)
	if len(rep.LostFailed) != 1 || rep.LostFailed[0] != ghostID {
		t.Errorf("lost orders %v, want [%s]", rep.LostFailed, ghostID)
	}
	if len(rep.BuyersRestored) != 1 || rep.BuyersRestored[0] != msgs[0].UserID {
		t.Errorf("restored buyers %v, want [%s]", rep.BuyersRestored, msgs[0].UserID)
	}
	if rep.InFlight != 1 || rep.StockDB != 15 {
		t.Errorf("in flight %d, stock db %d; want 1, 15", rep.InFlight, rep.StockDB)
	}
	// Postgres has 15 units; one more is promised to the buyer in flight.
	if s := e.RedisStock(sale); s != 14 || rep.StockRedisAfter != 14 {
		t.Fatalf("redis stock %d (reported %d), want 14", s, rep.StockRedisAfter)
	}
	if got := e.Redis.HGet(ctx, contract.BuyersKey(sale), msgs[0].UserID).Val(); got != msgs[0].OrderID {
		t.Errorf("forgotten buyer not restored: %q", got)
	}
	if e.Redis.HExists(ctx, contract.BuyersKey(sale), "ghost").Val() {
		t.Error("the lost buyer is still in Redis")
	}
	if e.Redis.HGet(ctx, contract.BuyersKey(sale), inflight.UserID).Val() != inflight.OrderID {
		t.Error("the buyer in flight was touched")
	}
	var status, reason string
	_ = e.Pool.QueryRow(ctx, `SELECT status, reason FROM orders WHERE order_id = $1`, ghostID).Scan(&status, &reason)
	if status != "failed" || reason != reconcile.ReasonLost {
		t.Errorf("lost order is %s/%s, want failed/%s", status, reason, reconcile.ReasonLost)
	}
	// The message in flight arrives: it is written, and everything agrees.
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, []contract.OrderMessage{inflight}); err != nil {
		t.Fatal(err)
	}
	rep2, err := e.Svc.Reconciler.Reconcile(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep2.Actions) != 0 || rep2.StockRedisAfter != 14 {
		t.Fatalf("a second reconcile found more to do: %+v", rep2)
	}
}
