//go:build integration

package sales_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	adminapi "github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The admin API of sales over the whole backend: create, preheat, report, the baselines.

func TestAdminAPICreatesPreheatsAndReportsASaleBehindItsToken(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	_, srv := e.Servers(false)
	sale := testenv.ID("adm")
	t.Cleanup(func() {
		e.Redis.Del(context.Background(), contract.MetaKey(sale))
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	auth := servicetest.AdminAuth
	starts := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := `{"id":"` + sale + `","stock":7,"starts_at":"` + starts + `","ends_at":"` + ends + `","pay_within":"15m"}`

	var ref contract.Refusal
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": servicetest.TestAdminToken}} {
		if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", h, body, &ref); code != 401 || ref.Code != contract.CodeUnauthenticated {
			t.Fatalf("create with %v: %d %+v", h, code, ref)
		}
	}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", auth, `{"id":"x y","stock":1}`, &ref); code != 400 {
		t.Fatalf("bad body: %d", code)
	}
	var st adminapi.SaleStatus
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", auth, body, &st); code != 201 || st.StockDB != 7 || st.PayWithin != "15m0s" {
		t.Fatalf("create: %d %+v", code, st)
	}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", auth, body, &ref); code != 409 {
		t.Fatalf("create twice: %d", code)
	}
	var pre admin.PreheatResult
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", auth, "", &pre); code != 200 || !pre.Created || pre.StockRedis != 7 {
		t.Fatalf("preheat: %d %+v", code, pre)
	}
	e.Redis.HIncrBy(ctx, contract.MetaKey(sale), contract.FieldStock, -2) // two sold
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+sale+"/preheat", auth, "", &pre); code != 200 || pre.Created || pre.StockRedis != 5 {
		t.Fatalf("preheat again reset a selling sale: %d %+v", code, pre)
	}
	if !e.Redis.SIsMember(ctx, contract.SalesIndexKey, sale).Val() {
		t.Fatal("preheat did not add the sale to the sales index")
	}
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+sale, auth, "", &st); code != 200 || st.StockRedis == nil || *st.StockRedis != 5 || st.StockDB != 7 {
		t.Fatalf("status: %d %+v", code, st)
	}
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+testenv.ID("none"), auth, "", &ref); code != 404 || ref.Code != contract.CodeUnknownSale {
		t.Fatalf("status of an unknown sale: %d %+v", code, ref)
	}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+testenv.ID("none")+"/preheat", auth, "", &ref); code != 404 {
		t.Fatalf("preheat of an unknown sale: %d", code)
	}
}

func TestBaselinesNeedTheAdminTokenRefuseALiveSaleAndSellEachUnitOnce(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	orderSrv, admin := e.Servers(true)
	buyer := func(user string) map[string]string {
		return map[string]string{"X-User-ID": user, "Authorization": "Bearer " + servicetest.TestAdminToken}
	}
	for _, kind := range []string{"pessimistic", "optimistic"} {
		sale := testenv.ID("base")
		now := time.Now()
		if _, err := e.Svc.Sales.CreateSale(context.Background(), backend.SaleSpec{ID: sale, Stock: 2, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		url := admin.URL + "/baseline/" + kind + "/" + sale
		var ref contract.Refusal
		for _, h := range []map[string]string{{"X-User-ID": "a"}, {"X-User-ID": "a", "Authorization": "Bearer " + servicetest.TestViewerToken}} {
			if code := servicetest.DoJSON(t, "POST", url, h, "", &ref); code != 401 && code != 403 {
				t.Fatalf("%s without the admin token: %d %+v", kind, code, ref)
			}
		}
		if code := servicetest.DoJSON(t, "POST", orderSrv.URL+"/baseline/"+kind+"/"+sale, buyer("a"), "", &ref); code != 404 || ref.Code != httpapi.CodeNotFound {
			t.Fatalf("%s served on the order listener: %d %+v", kind, code, ref)
		}
		if n := e.Accounted(sale); n != 0 {
			t.Fatalf("%s: refused requests wrote %d orders", kind, n)
		}
		if code := servicetest.DoJSON(t, "POST", url, buyer("a"), "", nil); code != 202 {
			t.Fatalf("%s: first buy %d", kind, code)
		}
		if code := servicetest.DoJSON(t, "POST", url, buyer("a"), "", &ref); code != 409 || ref.Code != contract.CodeAlreadyBought {
			t.Fatalf("%s: same user again %d %+v", kind, code, ref)
		}
		if code := servicetest.DoJSON(t, "POST", url, buyer("b"), "", nil); code != 202 {
			t.Fatalf("%s: second buyer %d", kind, code)
		}
		if code := servicetest.DoJSON(t, "POST", url, buyer("c"), "", &ref); code != 409 || ref.Code != contract.CodeSoldOut {
			t.Fatalf("%s: third buyer %d %+v", kind, code, ref)
		}
		// A sale preheated into Redis belongs to the gate: the baselines refuse it.
		live := e.Sale(5)
		if code := servicetest.DoJSON(t, "POST", admin.URL+"/baseline/"+kind+"/"+live, buyer("d"), "", &ref); code != 409 || ref.Code != httpapi.CodeSalePreheated {
			t.Fatalf("%s on a preheated sale: %d %+v", kind, code, ref)
		}
		if n := e.Accounted(live); n != 0 {
			t.Fatalf("%s wrote %d orders into a live sale", kind, n)
		}
	}
	// Off by default.
	_, off := e.Servers(false)
	if code := servicetest.DoJSON(t, "POST", off.URL+"/baseline/optimistic/x", buyer("a"), "", nil); code != 404 {
		t.Fatalf("baselines served without the flag: %d", code)
	}
}

func TestConcurrentPreheatsLoadTheSaleOnce(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := testenv.ID("pre")
	now := time.Now()
	if _, err := e.Svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: sale, Stock: 9, StartsAt: now, EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Redis.Del(context.Background(), contract.MetaKey(sale))
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Svc.Sales.Preheat(ctx, sale)
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
