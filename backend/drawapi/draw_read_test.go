//go:build integration

package drawapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/drawapi"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The public reads of a draw are on the order listener (the one the gateway proxies), with the
// buyer read from X-User-ID exactly as GET /orders/{id} reads it; the admin listener has none
// of them. (What they answer is backend/drawapi's tests.)
func TestDrawReadsAreOnTheOrderListenerWithItsUserCheck(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	orders, adminSrv := e.Servers(false)
	sale := testenv.ID("d")
	now := time.Now()
	ctx := context.Background()
	if _, err := e.Pool.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ($1, 1, 1, $2, $3)`,
		sale, now.Add(time.Hour), now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pool.Exec(ctx, `INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, seed_commitment)
		VALUES ($1, $2, $3, 60000, 'c0')`, sale, now.Add(-time.Hour), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var res drawapi.Result
	if st := servicetest.DoJSON(t, http.MethodGet, orders.URL+"/seckill/"+sale+"/draw/result", nil, "", &res); st != 200 || res.State != "open" {
		t.Fatalf("result on the order listener: %d %+v", st, res)
	}
	for _, c := range []struct {
		headers map[string]string
		status  int
		code    string
	}{
		{nil, 401, contract.CodeUnauthenticated},
		{map[string]string{"X-User-ID": "bad id!"}, 401, contract.CodeUnauthenticated},
		{map[string]string{"X-User-ID": "u1"}, 409, drawapi.CodeNotClosed},
	} {
		var r contract.Refusal
		if st := servicetest.DoJSON(t, http.MethodGet, orders.URL+"/seckill/"+sale+"/draw/proof", c.headers, "", &r); st != c.status || r.Code != c.code {
			t.Fatalf("proof with %v: %d %q, want %d %q", c.headers, st, r.Code, c.status, c.code)
		}
	}
	var r contract.Refusal
	if st := servicetest.DoJSON(t, http.MethodPost, orders.URL+"/seckill/"+sale+"/draw/result", nil, "", &r); st != 405 || r.Code != "method_not_allowed" {
		t.Fatalf("POST result: %d %q", st, r.Code)
	}
	if st := servicetest.DoJSON(t, http.MethodGet, adminSrv.URL+"/seckill/"+sale+"/draw/result", nil, "", &r); st != 404 {
		t.Fatalf("result on the admin listener: %d", st)
	}
}
