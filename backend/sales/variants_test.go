//go:build integration

package sales_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	adminapi "github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestAdminCreatesAVariantSaleAndShowsEachVariantInBothStores(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	_, admin := e.Servers(false)
	id := testenv.ID("sv")
	t.Cleanup(func() {
		e.Redis.Del(context.Background(), contract.MetaKey(id), contract.HeldKey(id), contract.BuyersKey(id), contract.OutboxKey(id))
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, id)
	})
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"id":%q,"starts_at":%q,"ends_at":%q,"per_user_limit":2,"variants":[{"id":"s42","stock":3},{"id":"s43","stock":5}]}`,
		id, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	var st adminapi.SaleStatus
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/admin/sales", servicetest.AdminAuth, body, &st); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if st.InitialStock != 8 || st.StockDB != 8 || st.PerUserLimit != 2 || len(st.Variants) != 2 || st.Variants[1].StockDB != 5 {
		t.Fatalf("created sale status %+v", st)
	}
	var refusal contract.Refusal
	for _, bad := range []string{
		strings.Replace(body, `"per_user_limit":2`, `"per_user_limit":2,"stock":1`, 1),
		strings.Replace(body, `"per_user_limit":2`, `"per_user_limit":1001`, 1),
		strings.Replace(body, `"s43"`, `"s 43"`, 1),
		strings.Replace(body, `"stock":5`, `"stock":-5`, 1),
	} {
		if code := servicetest.DoJSON(t, "POST", admin.URL+"/admin/sales", servicetest.AdminAuth, bad, &refusal); code != 400 || refusal.Code != contract.CodeBadRequest {
			t.Errorf("%s: %d %+v", bad, code, refusal)
		}
	}
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/admin/sales/"+id+"/preheat", servicetest.AdminAuth, "", nil); code != 200 {
		t.Fatalf("preheat: %d", code)
	}
	if _, _, ok := e.Buy(id, "u1", "s42", 2); !ok {
		t.Fatal("the gate refused a purchase of 2 of s42")
	}
	if code := servicetest.DoJSON(t, "GET", admin.URL+"/admin/sales/"+id, servicetest.AdminAuth, "", &st); code != 200 {
		t.Fatalf("status: %d", code)
	}
	v := st.Variants
	if len(v) != 2 || v[0].ID != "s42" || v[0].StockRedis == nil || *v[0].StockRedis != 1 || v[0].StockDB != 3 ||
		v[1].StockRedis == nil || *v[1].StockRedis != 5 || *st.StockRedis != 6 {
		t.Fatalf("status after a purchase of 2 of s42: %+v", st)
	}
}

// Writers racing on one variant sale, with more demand than stock in every variant and
// quantities above 1: no variant gives more units than it has, the total follows the
// variants, and every message is exactly one order.
func TestConcurrentWritersGuardEveryVariantInUnits(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	variants := []backend.VariantSpec{{ID: "a", Stock: 20}, {ID: "b", Stock: 7}, {ID: "c", Stock: 1}, {ID: "d", Stock: 0}}
	sale := e.VariantSale(3, variants...)
	r := rand.New(rand.NewPCG(1, 2))
	var msgs []contract.OrderMessage
	for i := 0; i < 150; i++ {
		v := variants[r.IntN(3)].ID
		// Not through the gate: the gate would refuse what does not fit. The writer must hold
		// even when Redis believed in more units than Postgres has.
		m := contract.OrderMessage{OrderID: uuid.Must(uuid.NewV7()).String(), SaleID: sale, UserID: "u" + strconv.Itoa(i%100),
			AcceptedAt: time.Now().UTC(), Variant: v, Quantity: 1 + r.IntN(3), SeqNo: 1 + i/100}
		msgs = append(msgs, m)
	}
	// One message names a variant the sale does not have.
	msgs = append(msgs, contract.OrderMessage{OrderID: uuid.Must(uuid.NewV7()).String(), SaleID: sale, UserID: "stray",
		AcceptedAt: time.Now().UTC(), Variant: "zz", Quantity: 1, SeqNo: 1})
	w := &orders.Writer{Pool: e.Pool}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]orders.OrderRef{}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := servicetest.Shuffled(msgs)
			for i := 0; i < len(mine); i += 20 {
				for {
					res, err := w.WriteBatch(context.Background(), mine[i:min(i+20, len(mine))])
					if err == nil {
						mu.Lock()
						for _, f := range res.Failed {
							if _, twice := failed[f.OrderID]; twice {
								t.Errorf("order %s reported failed twice", f.OrderID)
							}
							failed[f.OrderID] = f
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
	if n := e.Accounted(sale); n != len(msgs) {
		t.Fatalf("%d orders for %d messages", n, len(msgs))
	}
	held := e.VariantUnits(sale)
	for _, v := range variants {
		if held[v.ID] > v.Stock {
			t.Errorf("variant %s: %d units sold of %d", v.ID, held[v.ID], v.Stock)
		}
	}
	// Demand exceeded every variant that had stock: the split fills a variant as long as an
	// order of size 1 was left to fit, so a and b end with fewer units left than 3.
	if held["a"] < 18 || held["b"] < 5 || held["c"] != 1 {
		t.Errorf("units held %v: a variant was left unsold while demand remained", held)
	}
	failedRows := e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'failed'`, sale)
	if failedRows != len(failed) {
		t.Fatalf("%d failed rows, %d reported for compensation", failedRows, len(failed))
	}
	var st, reason string
	_ = e.Pool.QueryRow(context.Background(), `SELECT status, reason FROM orders WHERE user_id = 'stray' AND sale_id = $1`, sale).Scan(&st, &reason)
	if st != contract.StatusFailed || reason != orders.ReasonUnknownVariant {
		t.Fatalf("the order for an unknown variant is %s (%s)", st, reason)
	}
	for _, f := range failed {
		if f.Variant == "" || f.Quantity < 1 {
			t.Fatalf("a failed order is reported without its variant and quantity: %+v", f)
		}
	}
}

// The whole backend round trip through the real gate: a limit-2 variant sale bought in
// quantities, written by the consumer, an unpaid order released by the sweeper gives its units
// back to its variant in both stores and to the user's allowance, and the user can buy again.
func TestUnpaidVariantOrdersGiveTheirUnitsBackToTheirVariantAndTheUsersLimit(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.VariantSale(2, backend.VariantSpec{ID: "red", Stock: 4}, backend.VariantSpec{ID: "blue", Stock: 2})
	var msgs []contract.OrderMessage
	m1, _, ok1 := e.Buy(sale, "alice", "red", 2)
	m2, _, ok2 := e.Buy(sale, "bob", "blue", 1)
	m3, _, ok3 := e.Buy(sale, "bob", "red", 1)
	if !ok1 || !ok2 || !ok3 {
		t.Fatal("the gate refused a purchase within the limit")
	}
	if _, reply, ok := e.Buy(sale, "alice", "blue", 1); ok || reply[0].(int64) != 12 {
		t.Fatalf("alice's third unit: %v, want limit_reached", reply)
	}
	msgs = append(msgs, m1, m2, m3, m3) // and a duplicate
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(msgs))
	e.StartConsumer(10)
	testenv.WaitFor(t, 30*time.Second, "3 orders written", func() bool { return e.Accounted(sale) == 3 })
	if held := e.VariantUnits(sale); held["red"] != 3 || held["blue"] != 1 {
		t.Fatalf("units held %v, want red 3 blue 1", held)
	}
	orderSrv, _ := e.Servers(false)
	var view orders.OrderView
	if code := servicetest.DoJSON(t, "GET", orderSrv.URL+"/orders/"+m1.OrderID, map[string]string{"X-User-ID": "alice"}, "", &view); code != 200 ||
		view.Variant != "red" || view.Quantity != 2 || view.Status != contract.StatusCreated {
		t.Fatalf("GET /orders: %d %+v", code, view)
	}
	// Alice does not pay.
	if _, err := e.Pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE order_id = $1`, m1.OrderID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Svc.Sweeper.SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if held := e.VariantUnits(sale); held["red"] != 1 {
		t.Fatalf("after the release, units held %v, want red 1", held)
	}
	if v := e.DBInt(`SELECT stock FROM sale_variants WHERE sale_id = $1 AND variant_id = 'red'`, sale); v != 3 {
		t.Fatalf("postgres red stock %d, want 3", v)
	}
	meta := e.Redis.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta["v:red"] != "3" || meta["v:blue"] != "1" || meta["stock"] != "4" {
		t.Fatalf("redis after the release: %v, want v:red 3, v:blue 1, stock 4", meta)
	}
	if h := e.Redis.HGet(ctx, contract.HeldKey(sale), "alice").Val(); h != "0" {
		t.Fatalf("alice holds %q units in redis after her order was released", h)
	}
	// Compensation is idempotent: again, nothing moves.
	if n := e.Svc.Compensator.Compensate(ctx, []orders.OrderRef{{OrderID: m1.OrderID, SaleID: sale, UserID: "alice", Variant: "red", Quantity: 2}}); n != 0 {
		t.Fatalf("a second compensation returned %d", n)
	}
	// Alice may buy two units again: her second purchase in the sale.
	m4, _, ok := e.Buy(sale, "alice", "blue", 1)
	m5, _, ok5 := e.Buy(sale, "alice", "red", 1)
	if !ok || !ok5 || m4.Seq() != 2 || m5.Seq() != 3 {
		t.Fatalf("alice buying again: %v %v seq %d %d", ok, ok5, m4.Seq(), m5.Seq())
	}
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies([]contract.OrderMessage{m4, m5}))
	testenv.WaitFor(t, 30*time.Second, "5 orders written", func() bool { return e.Accounted(sale) == 5 })
	if held := e.VariantUnits(sale); held["red"] != 2 || held["blue"] != 2 {
		t.Fatalf("units held %v, want red 2 blue 2", held)
	}
}

// A batch the variant guard refuses in Postgres (Redis believed in more units) creates what
// fits, fails the rest and the consumer gives their units back to the right variant in Redis.
func TestVariantOrdersRefusedByThePostgresGuardAreCompensatedToTheirVariant(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.VariantSale(5, backend.VariantSpec{ID: "x", Stock: 3}, backend.VariantSpec{ID: "y", Stock: 10})
	// Redis is wrong about x: it has 10 units there.
	e.Redis.HSet(ctx, contract.MetaKey(sale), "v:x", 10, "stock", 20)
	var msgs []contract.OrderMessage
	for i := 0; i < 5; i++ {
		m, reply, ok := e.Buy(sale, "u"+strconv.Itoa(i), "x", 2)
		if !ok {
			t.Fatalf("gate refused: %v", reply)
		}
		msgs = append(msgs, m)
	}
	servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(msgs))
	e.StartConsumer(50)
	testenv.WaitFor(t, 30*time.Second, "5 orders written", func() bool { return e.Accounted(sale) == 5 })
	if held := e.VariantUnits(sale); held["x"] != 2 {
		t.Fatalf("units held %v, want x 2 (one order of 2 fits in 3)", held)
	}
	testenv.WaitFor(t, 10*time.Second, "4 compensations", func() bool {
		return e.DBInt(`SELECT count(*) FROM orders WHERE sale_id = $1 AND compensated_at IS NOT NULL`, sale) == 4
	})
	meta := e.Redis.HGetAll(ctx, contract.MetaKey(sale)).Val()
	// 10 - 5*2 = 0, then 4 failed orders of 2 come back.
	if meta["v:x"] != "8" || meta["stock"] != "18" || meta["v:y"] != "10" {
		t.Fatalf("redis after compensation: %v", meta)
	}
}

// Reconcile of a variant sale: a variant's stock Redis got wrong is repaired from Postgres,
// in units, and left alone while units are in flight (they cannot be attributed to a variant).
func TestReconcileRepairsEachVariantInUnits(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.VariantSale(3, backend.VariantSpec{ID: "red", Stock: 5}, backend.VariantSpec{ID: "blue", Stock: 5})
	m1, _, ok1 := e.Buy(sale, "u1", "red", 3)
	m2, _, ok2 := e.Buy(sale, "u2", "blue", 2)
	if !ok1 || !ok2 {
		t.Fatal("the gate refused")
	}
	w := &orders.Writer{Pool: e.Pool}
	if _, err := w.WriteBatch(ctx, []contract.OrderMessage{m1, m2}); err != nil {
		t.Fatal(err)
	}
	// Redis lost 2 units of red and invented 1 of blue.
	e.Redis.HIncrBy(ctx, contract.MetaKey(sale), "v:red", -2)
	e.Redis.HIncrBy(ctx, contract.MetaKey(sale), "v:blue", 1)
	e.Redis.HIncrBy(ctx, contract.MetaKey(sale), "stock", -1)
	// One more purchase, not written yet: in flight.
	m3, _, ok3 := e.Buy(sale, "u3", "blue", 1)
	if !ok3 {
		t.Fatal("the gate refused")
	}
	rep, err := e.Svc.Reconciler.Reconcile(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	meta := e.Redis.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if rep.InFlight != 1 || rep.StockDelta != 0 || meta["v:red"] != "0" {
		t.Fatalf("with a unit in flight: %+v, meta %v (nothing should change)", rep, meta)
	}
	if _, err := w.WriteBatch(ctx, []contract.OrderMessage{m3}); err != nil {
		t.Fatal(err)
	}
	rep, err = e.Svc.Reconciler.Reconcile(ctx, sale)
	if err != nil {
		t.Fatal(err)
	}
	meta = e.Redis.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if rep.InFlight != 0 || rep.StockDelta != 1 || meta["v:red"] != "2" || meta["v:blue"] != "2" || meta["stock"] != "4" {
		t.Fatalf("after the write: %+v, meta %v, want red 2 blue 2 stock 4", rep, meta)
	}
	// Everything agrees now: a second run changes nothing.
	if rep, err = e.Svc.Reconciler.Reconcile(ctx, sale); err != nil || rep.StockDelta != 0 || len(rep.BuyersRestored) != 0 {
		t.Fatalf("a second reconcile: %+v %v", rep, err)
	}
}

func TestAStockChangeOfAVariantSaleIsRefusedWithItsCode(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.VariantSale(1, backend.VariantSpec{ID: "a", Stock: 2})
	_, err := e.Svc.Controls.ChangeStock(servicetest.WithWho(context.Background()), sale, controls.StockRequest{Add: 3, RequestID: "r-" + sale})
	// The error reads "<code>: <message>" (the 409 over HTTP:
	// TestUnitsAddedToASoldOutVariantAreSoldAgainOnceAndAudited).
	if err == nil || !strings.HasPrefix(err.Error(), "variant_sale: ") {
		t.Fatalf("stock change of a variant sale: %v", err)
	}
	if n := e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale); n != 2 {
		t.Fatalf("postgres stock %d after a refused change", n)
	}
}

// The shop hears of a variant order with its variant and quantity.
func TestWebhooksOfAVariantOrderCarryItsVariantAndQuantity(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	r := servicetest.NewReceiver(t)
	e.StartHooks(r.Srv.URL, 2*time.Second, 5)
	sale := e.VariantSale(3, backend.VariantSpec{ID: "eu42", Stock: 5})
	m, _, ok := e.Buy(sale, "carol", "eu42", 3)
	if !ok {
		t.Fatal("the gate refused")
	}
	w := &orders.Writer{Pool: e.Pool, DefaultWebhook: true}
	if _, err := w.WriteBatch(context.Background(), []contract.OrderMessage{m}); err != nil {
		t.Fatal(err)
	}
	e.Svc.Webhooks.Wake()
	testenv.WaitFor(t, 10*time.Second, "the order.created event", func() bool {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		return len(r.PerOrder[m.OrderID]) == 1
	})
	r.Mu.Lock()
	defer r.Mu.Unlock()
	for _, ev := range r.Events {
		if ev.OrderID == m.OrderID && (ev.Variant != "eu42" || ev.Quantity != 3 || ev.Type != contract.EventOrderCreated) {
			t.Fatalf("event %+v, want variant eu42, quantity 3", ev)
		}
	}
}

// A sharded variant sale: each shard gets its part of every variant and the limit, the admin
// status sums each variant over the shards.
func TestAShardedVariantSaleSplitsEveryVariantOverItsShards(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	id := testenv.ID("svs")
	now := time.Now()
	if _, err := e.Svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: id, Shards: 3, PerUserLimit: 2, Variants: []backend.VariantSpec{{ID: "a", Stock: 7}, {ID: "b", Stock: 2}},
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ids := contract.ShardIDs(id, 3)
	t.Cleanup(func() {
		for _, x := range append(ids, id) {
			e.Redis.Del(context.Background(), contract.MetaKey(x), contract.HeldKey(x), contract.BuyersKey(x), contract.OutboxKey(x))
			e.Redis.SRem(context.Background(), contract.SalesIndexKey, x)
		}
	})
	if _, err := e.Svc.Sales.Preheat(ctx, id); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"v:a": "3", "v:b": "1", "stock": "4", "limit": "2"}, {"v:a": "2", "v:b": "1", "stock": "3"}, {"v:a": "2", "v:b": "0", "stock": "2"}}
	for i, x := range ids {
		m := e.Redis.HGetAll(ctx, contract.MetaKey(x)).Val()
		for f, v := range want[i] {
			if m[f] != v {
				t.Fatalf("shard %s: %s = %q, want %q (meta %v)", x, f, m[f], v, m)
			}
		}
	}
	st, err := e.Svc.Sales.SaleStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Variants) != 2 || st.Variants[0].StockRedis == nil || *st.Variants[0].StockRedis != 7 || *st.Variants[1].StockRedis != 2 || *st.StockRedis != 9 {
		t.Fatalf("status of the sharded variant sale: %+v", st)
	}
}
