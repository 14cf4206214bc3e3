//go:build integration

package orders_test

import (
	"context"
	"testing"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestOrderStatusIsQueuedThenCreatedAndOnlyTheOwnerSeesIt(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(5)
	m := e.Accept(sale, 1)[0]
	srv, _ := e.Servers(false)
	get := func(user, id string) (int, orders.OrderView, contract.Refusal) {
		var v orders.OrderView
		var ref contract.Refusal
		code := servicetest.DoJSON(t, "GET", srv.URL+"/orders/"+id, map[string]string{"X-User-ID": user}, "", &v)
		if code != 200 {
			servicetest.DoJSON(t, "GET", srv.URL+"/orders/"+id, map[string]string{"X-User-ID": user}, "", &ref)
		}
		return code, v, ref
	}
	if code, v, _ := get(m.UserID, m.OrderID); code != 200 || v.Status != contract.StatusQueued || v.SaleID != sale {
		t.Fatalf("before the write: %d %+v, want queued in %s", code, v, sale)
	}
	if code, _, ref := get("someone-else", m.OrderID); code != 404 || ref.Code != contract.CodeUnknownOrder {
		t.Fatalf("another user sees a queued order: %d %+v", code, ref)
	}
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, []contract.OrderMessage{m}); err != nil {
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
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/orders/"+m.OrderID, nil, "", &ref); code != 401 || ref.Code != contract.CodeUnauthenticated {
		t.Fatalf("without X-User-ID: %d %+v", code, ref)
	}
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/orders/"+m.OrderID, map[string]string{"X-User-ID": "bad user"}, "", &ref); code != 401 {
		t.Fatalf("invalid X-User-ID: %d", code)
	}
}

func TestOnlyTheShopConfirmsPaymentOnceAndFailedOrdersAreNotPayable(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(1)
	msgs := e.Accept(sale, 3) // the third is over the stock of Postgres: it fails
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var created, failed contract.OrderMessage
	for _, m := range msgs {
		var st string
		_ = e.Pool.QueryRow(ctx, `SELECT status FROM orders WHERE order_id = $1`, m.OrderID).Scan(&st)
		if st == contract.StatusCreated {
			created = m
		} else {
			failed = m
		}
	}
	orderSrv, admin := e.Servers(false)
	status := func(m contract.OrderMessage) string {
		var v orders.OrderView
		servicetest.DoJSON(t, "GET", orderSrv.URL+"/orders/"+m.OrderID, map[string]string{"X-User-ID": m.UserID}, "", &v)
		return v.Status
	}
	// The buyer cannot pay through the order API, whatever the method or path.
	var ref contract.Refusal
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/orders/" + created.OrderID + "/pay", 404},
		{"POST", "/orders/" + created.OrderID, 405},
		{"PUT", "/orders/" + created.OrderID, 405},
		{"PATCH", "/orders/" + created.OrderID, 405},
		{"POST", "/shop/orders/" + created.OrderID + "/paid", 404},
	} {
		if code := servicetest.DoJSON(t, tc.method, orderSrv.URL+tc.path, map[string]string{"X-User-ID": created.UserID}, `{"status":"paid"}`, &ref); code != tc.want || ref.Code == "" {
			t.Fatalf("%s %s on the order API: %d %+v, want %d with a JSON code", tc.method, tc.path, code, ref, tc.want)
		}
	}
	// Nor can any token but the shop's, on the admin listener.
	paid := admin.URL + "/shop/orders/" + created.OrderID + "/paid"
	for _, h := range []map[string]string{nil, {"X-User-ID": created.UserID}, servicetest.AdminAuth, {"Authorization": "Bearer " + servicetest.TestViewerToken}} {
		if code := servicetest.DoJSON(t, "POST", paid, h, "", &ref); code != 401 && code != 403 {
			t.Fatalf("paid with %v: %d %+v", h, code, ref)
		}
	}
	if st := status(created); st != contract.StatusCreated {
		t.Fatalf("after the refused attempts the order is %s", st)
	}
	for i := 0; i < 2; i++ {
		var res orders.PaidResult
		if code := servicetest.DoJSON(t, "POST", paid, servicetest.ShopAuth, "", &res); code != 200 || res.Status != contract.StatusPaid || res.SaleID != sale || res.OrderID != created.OrderID {
			t.Fatalf("paid #%d: %d %+v", i+1, code, res)
		}
	}
	if st := status(created); st != contract.StatusPaid {
		t.Fatalf("after the shop's confirmation the order is %s", st)
	}
	if n := e.DBInt(`SELECT count(*) FROM webhook_deliveries WHERE order_id = $1 AND type = 'order.paid'`, created.OrderID); n != 0 {
		t.Fatalf("%d order.paid events without any webhook configured", n)
	}
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/shop/orders/"+failed.OrderID+"/paid", servicetest.ShopAuth, "", &ref); code != 409 || ref.Code != contract.CodeNotPayable {
		t.Fatalf("paid of a failed order: %d %+v", code, ref)
	}
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/shop/orders/"+testenv.ID("none")+"/paid", servicetest.ShopAuth, "", &ref); code != 404 || ref.Code != contract.CodeUnknownOrder {
		t.Fatalf("paid of an unknown order: %d %+v", code, ref)
	}
	// Accepted by the gate, not written yet: not payable (the shop waits for order.created).
	queued := e.Accept(sale, 1)[0]
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/shop/orders/"+queued.OrderID+"/paid", servicetest.ShopAuth, "", &ref); code != 409 || ref.Code != contract.CodeNotPayable {
		t.Fatalf("paid of a queued order: %d %+v", code, ref)
	}
	var v orders.OrderView
	servicetest.DoJSON(t, "GET", orderSrv.URL+"/orders/"+failed.OrderID, map[string]string{"X-User-ID": failed.UserID}, "", &v)
	if v.Status != contract.StatusFailed || v.Reason != orders.ReasonSoldOutInDB {
		t.Fatalf("failed order shows %+v", v)
	}
}

func TestPaymentPastPayWithinIsRefusedEvenBeforeTheSweeper(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	sale := e.Sale(2)
	m := e.Accept(sale, 1)[0]
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(ctx, []contract.OrderMessage{m}); err != nil {
		t.Fatal(err)
	}
	_, _ = e.Pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '1 hour' WHERE order_id = $1`, m.OrderID)
	_, admin := e.Servers(false)
	var ref contract.Refusal
	if code := servicetest.DoJSON(t, "POST", admin.URL+"/shop/orders/"+m.OrderID+"/paid", servicetest.ShopAuth, "", &ref); code != 409 || ref.Code != contract.CodeNotPayable {
		t.Fatalf("paid past pay_within: %d %+v", code, ref)
	}
}
