//go:build integration

package controls_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A stock add that would take a sale past what its Postgres columns hold (integer: 2^31 - 1)
// is the client's 400 bad_request naming the field, not 503 "cannot reach its database", and
// changes nothing: a sale holds at most 1e9 units, as its creation already says.
func TestAStockAddPastInt32IsABadRequest(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	srv := e.ControlServer()
	sale := e.Sale(1_000_000_000)
	for i, body := range []string{
		`{"add":1000000000,"request_id":"big-1"}`, // 2e9: fits an int32, but past 1e9
		`{"add":1000000000,"request_id":"big-2"}`, // and again: 3e9 overflowed Postgres
		`{"add":3000000000,"request_id":"big-3"}`, // past the add bound itself
		`{"add":1,"request_id":"big-4"}`,
	} {
		var ref contract.Refusal
		code := servicetest.Call(t, srv, "POST", "/admin/sales/"+sale+"/stock", servicetest.AliceToken, body, &ref)
		if code != http.StatusBadRequest || ref.Code != contract.CodeBadRequest || !strings.Contains(ref.Message, "add") {
			t.Fatalf("%d: %s answered %d %+v, want 400 bad_request naming add", i, body, code, ref)
		}
	}
	if db, init, r := e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale), e.DBInt(`SELECT initial_stock FROM sales WHERE id = $1`, sale), e.RedisStock(sale); db != 1e9 || init != 1e9 || r != 1e9 {
		t.Fatalf("refused adds changed the stock: Postgres %d (initial %d), Redis %d", db, init, r)
	}
	if n := e.DBInt(`SELECT count(*) FROM stock_changes WHERE sale_id = $1`, sale); n != 0 {
		t.Fatalf("%d journal rows for refused adds", n)
	}
	// Up to 1e9 is fine, and removing stays possible.
	var res admin.ControlResult
	if code := servicetest.Call(t, srv, "POST", "/admin/sales/"+sale+"/stock", servicetest.AliceToken, `{"add":-5,"request_id":"cut-1"}`, &res); code != 200 {
		t.Fatalf("removing 5: %d", code)
	}
	if code := servicetest.Call(t, srv, "POST", "/admin/sales/"+sale+"/stock", servicetest.AliceToken, `{"add":5,"request_id":"back-1"}`, &res); code != 200 || res.Sale.InitialStock != 1e9 {
		t.Fatalf("adding 5 back up to 1e9: %d %+v", code, res.Sale)
	}

	// A variant's add counts against its sale's total.
	vsale := testenv.ID("v")
	now := time.Now().UTC()
	spec := fmt.Sprintf(`{"id":%q,"starts_at":%q,"ends_at":%q,"variants":[{"id":"a","stock":600000000},{"id":"b","stock":400000000}]}`,
		vsale, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	if code := servicetest.Call(t, srv, "POST", "/admin/sales", servicetest.AliceToken, spec, nil); code != http.StatusCreated {
		t.Fatalf("create the variant sale: %d", code)
	}
	var ref contract.Refusal
	if code := servicetest.Call(t, srv, "POST", "/admin/sales/"+vsale+"/stock", servicetest.AliceToken, `{"add":1500000000,"request_id":"vbig-1","variant":"a"}`, &ref); code != 400 || ref.Code != contract.CodeBadRequest {
		t.Fatalf("a variant add past the sale's 1e9: %d %+v", code, ref)
	}

	// A creation with a stock past the bound says which field.
	for field, body := range map[string]string{
		"stock":          `{"id":"huge","stock":3000000000,"starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z"}`,
		"variant":        `{"id":"huge","starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z","variants":[{"id":"a","stock":3000000000}]}`,
		"per_user_limit": `{"id":"huge","stock":1,"per_user_limit":3000000000,"starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z"}`,
	} {
		var ref contract.Refusal
		if code := servicetest.Call(t, srv, "POST", "/admin/sales", servicetest.AliceToken, body, &ref); code != 400 || ref.Code != contract.CodeBadRequest || !strings.Contains(ref.Message, field) {
			t.Errorf("create with a huge %s: %d %+v", field, code, ref)
		}
	}
}

// Should a value of the request still reach Postgres and be refused there (SQLSTATE class 22,
// a data exception, or 23514, a check the request broke), the answer is the client's 400
// bad_request naming the request's fields; a failure to reach the database stays 503.
func TestAValuePostgresRefusesIsABadRequestNotAnOutage(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	_, overflow := e.Pool.Exec(ctx, `SELECT 3000000000::int4`)
	_, check := e.Pool.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at) VALUES ('neg', -1, -1, now(), now() + interval '1h')`)
	for name, err := range map[string]error{"22003 out of range": overflow, "23514 check": check} {
		rec := httptest.NewRecorder()
		if !httpapi.RefuseBadValue(rec, fmt.Errorf("wrapped: %w", err), "add") {
			t.Fatalf("%s (%v): not answered as a bad value", name, err)
		}
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"code":"bad_request"`) || !strings.Contains(rec.Body.String(), "add") {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	_, down := e.Pool.Exec(ctx2, `SELECT 1`)
	for _, err := range []error{down, errors.New("dial tcp: connection refused")} {
		if httpapi.RefuseBadValue(httptest.NewRecorder(), err, "add") {
			t.Fatalf("%v answered as the client's bad value", err)
		}
	}
}
