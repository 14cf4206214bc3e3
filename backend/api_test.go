package backend

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestOrderStatusIsQueuedThenCreatedAndOnlyTheOwnerSeesIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sale := e.sale(5)
	m := e.accept(sale, 1)[0]
	srv := httptest.NewServer(e.svc.Handler(newRegistry(), false))
	defer srv.Close()
	get := func(user, id string) (int, OrderView, contract.Refusal) {
		var v OrderView
		var ref contract.Refusal
		code := doJSON(t, "GET", srv.URL+"/orders/"+id, map[string]string{"X-User-ID": user}, "", &v)
		if code != 200 {
			doJSON(t, "GET", srv.URL+"/orders/"+id, map[string]string{"X-User-ID": user}, "", &ref)
		}
		return code, v, ref
	}
	if code, v, _ := get(m.UserID, m.OrderID); code != 200 || v.Status != contract.StatusQueued || v.SaleID != sale {
		t.Fatalf("before the write: %d %+v, want queued in %s", code, v, sale)
	}
	if code, _, ref := get("someone-else", m.OrderID); code != 404 || ref.Code != contract.CodeUnknownOrder {
		t.Fatalf("another user sees a queued order: %d %+v", code, ref)
	}
	if _, err := (&Writer{Pool: e.pool}).WriteBatch(ctx, []contract.OrderMessage{m}); err != nil {
		t.Fatal(err)
	}
	if code, v, _ := get(m.UserID, m.OrderID); code != 200 || v.Status != contract.StatusCreated {
		t.Fatalf("after the write: %d %+v", code, v)
	}
	if code, _, ref := get("someone-else", m.OrderID); code != 404 || ref.Code != contract.CodeUnknownOrder {
		t.Fatalf("another user sees a created order: %d %+v", code, ref)
	}
	for _, id := range []string{"nope", "0190a0b0-0000-7000-8000-000000000000", "%00"} {
		if code, _, _ := get(m.UserID, id); code != 404 {
			t.Errorf("GET /orders/%s = %d, want 404", id, code)
		}
	}
	var ref contract.Refusal
	if code := doJSON(t, "GET", srv.URL+"/orders/"+m.OrderID, nil, "", &ref); code != 401 || ref.Code != contract.CodeUnauthenticated {
		t.Fatalf("without X-User-ID: %d %+v", code, ref)
	}
	if code := doJSON(t, "GET", srv.URL+"/orders/"+m.OrderID, map[string]string{"X-User-ID": "bad user"}, "", &ref); code != 401 {
		t.Fatalf("invalid X-User-ID: %d", code)
	}
}

func TestPayingIsIdempotentAndFailedOrdersAreNotPayable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sale := e.sale(1)
	msgs := e.accept(sale, 3) // the third is over the stock of Postgres: it fails
	if _, err := (&Writer{Pool: e.pool}).WriteBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var created, failed contract.OrderMessage
	for _, m := range msgs {
		var st string
		_ = e.pool.QueryRow(ctx, `SELECT status FROM orders WHERE order_id = $1`, m.OrderID).Scan(&st)
		if st == contract.StatusCreated {
			created = m
		} else {
			failed = m
		}
	}
	srv := httptest.NewServer(e.svc.Handler(newRegistry(), false))
	defer srv.Close()
	pay := func(m contract.OrderMessage, user string) (int, OrderView, contract.Refusal) {
		var v OrderView
		var ref contract.Refusal
		code := doJSON(t, "POST", srv.URL+"/orders/"+m.OrderID+"/pay", map[string]string{"X-User-ID": user}, "", &v)
		ref.Code = v.Status
		if code != 200 {
			doJSON(t, "GET", srv.URL+"/orders/"+m.OrderID, map[string]string{"X-User-ID": user}, "", nil)
		}
		return code, v, ref
	}
	for i := 0; i < 2; i++ {
		if code, v, _ := pay(created, created.UserID); code != 200 || v.Status != contract.StatusPaid || v.SaleID != sale {
			t.Fatalf("pay #%d: %d %+v", i+1, code, v)
		}
	}
	var ref contract.Refusal
	if code := doJSON(t, "POST", srv.URL+"/orders/"+failed.OrderID+"/pay", map[string]string{"X-User-ID": failed.UserID}, "", &ref); code != 409 || ref.Code != contract.CodeNotPayable {
		t.Fatalf("pay of a failed order: %d %+v", code, ref)
	}
	if code := doJSON(t, "POST", srv.URL+"/orders/"+created.OrderID+"/pay", map[string]string{"X-User-ID": failed.UserID}, "", &ref); code != 404 || ref.Code != contract.CodeUnknownOrder {
		t.Fatalf("pay of another user's order: %d %+v", code, ref)
	}
	var v OrderView
	doJSON(t, "GET", srv.URL+"/orders/"+failed.OrderID, map[string]string{"X-User-ID": failed.UserID}, "", &v)
	if v.Status != contract.StatusFailed || v.Reason != ReasonSoldOutInDB {
		t.Fatalf("failed order shows %+v", v)
	}
}

func TestAdminAPICreatesPreheatsAndReportsASaleBehindItsToken(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	srv := httptest.NewServer(e.svc.Handler(newRegistry(), false))
	defer srv.Close()
	sale := testenv.ID("adm")
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), contract.MetaKey(sale))
		e.rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	auth := map[string]string{"Authorization": "Bearer test-admin-token"}
	starts := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := `{"id":"` + sale + `","stock":7,"starts_at":"` + starts + `","ends_at":"` + ends + `","pay_within":"15m"}`

	var ref contract.Refusal
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "test-admin-token"}} {
		if code := doJSON(t, "POST", srv.URL+"/admin/sales", h, body, &ref); code != 401 || ref.Code != contract.CodeUnauthenticated {
			t.Fatalf("create with %v: %d %+v", h, code, ref)
		}
	}
	if code := doJSON(t, "POST", srv.URL+"/admin/sales", auth, `{"id":"x y","stock":1}`, &ref); code != 400 {
		t.Fatalf("bad body: %d", code)
	}
	var st SaleStatus
	if code := doJSON(t, "POST", srv.URL+"/admin/sales", auth, body, &st); code != 201 || st.StockDB != 7 || st.PayWithin != "15m0s" {
		t.Fatalf("create: %d %+v", code, st)
	}
	if code := doJSON(t, "POST", srv.URL+"/admin/sales", auth, body, &ref); code != 409 {
		t.Fatalf("create twice: %d", code)
	}
	var pre PreheatResult
	if code := doJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", auth, "", &pre); code != 200 || !pre.Created || pre.StockRedis != 7 {
		t.Fatalf("preheat: %d %+v", code, pre)
	}
	e.rdb.HIncrBy(ctx, contract.MetaKey(sale), contract.FieldStock, -2) // two sold
	if code := doJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", auth, "", &pre); code != 200 || pre.Created || pre.StockRedis != 5 {
		t.Fatalf("preheat again reset a selling sale: %d %+v", code, pre)
	}
	if !e.rdb.SIsMember(ctx, contract.SalesIndexKey, sale).Val() {
		t.Fatal("preheat did not add the sale to the sales index")
	}
	if code := doJSON(t, "GET", srv.URL+"/admin/sales/"+sale, auth, "", &st); code != 200 || st.StockRedis == nil || *st.StockRedis != 5 || st.StockDB != 7 {
		t.Fatalf("status: %d %+v", code, st)
	}
	if code := doJSON(t, "GET", srv.URL+"/admin/sales/"+testenv.ID("none"), auth, "", &ref); code != 404 || ref.Code != contract.CodeUnknownSale {
		t.Fatalf("status of an unknown sale: %d %+v", code, ref)
	}
	if code := doJSON(t, "POST", srv.URL+"/admin/sales/"+testenv.ID("none")+"/preheat", auth, "", &ref); code != 404 {
		t.Fatalf("preheat of an unknown sale: %d", code)
	}
}

func TestBaselinesSellEachUnitOnceAndOnePerUser(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.svc.Handler(newRegistry(), true))
	defer srv.Close()
	for _, kind := range []string{"pessimistic", "optimistic"} {
		sale := e.sale(2)
		url := srv.URL + "/baseline/" + kind + "/" + sale
		var ref contract.Refusal
		if code := doJSON(t, "POST", url, map[string]string{"X-User-ID": "a"}, "", nil); code != 202 {
			t.Fatalf("%s: first buy %d", kind, code)
		}
		if code := doJSON(t, "POST", url, map[string]string{"X-User-ID": "a"}, "", &ref); code != 409 || ref.Code != contract.CodeAlreadyBought {
			t.Fatalf("%s: same user again %d %+v", kind, code, ref)
		}
		if code := doJSON(t, "POST", url, map[string]string{"X-User-ID": "b"}, "", nil); code != 202 {
			t.Fatalf("%s: second buyer %d", kind, code)
		}
		if code := doJSON(t, "POST", url, map[string]string{"X-User-ID": "c"}, "", &ref); code != 409 || ref.Code != contract.CodeSoldOut {
			t.Fatalf("%s: third buyer %d %+v", kind, code, ref)
		}
	}
	// Off by default.
	off := httptest.NewServer(e.svc.Handler(newRegistry(), false))
	defer off.Close()
	if code := doJSON(t, "POST", off.URL+"/baseline/optimistic/x", map[string]string{"X-User-ID": "a"}, "", nil); code != 404 && code != 405 {
		t.Fatalf("baselines served without the flag: %d", code)
	}
}

func TestConcurrentPreheatsLoadTheSaleOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sale := testenv.ID("pre")
	now := time.Now()
	if _, err := e.svc.CreateSale(ctx, SaleSpec{ID: sale, Stock: 9, StartsAt: now, EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), contract.MetaKey(sale))
		e.rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.svc.Preheat(ctx, sale)
			if err != nil {
				t.Error(err)
				return
			}
			if res.StockRedis != 9 {
				t.Errorf("preheat left stock %d, want 9", res.StockRedis)
			}
			mu.Lock()
			if res.Created {
				created++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("%d preheats created the sale, want exactly 1", created)
	}
}
