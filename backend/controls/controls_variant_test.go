//go:build integration

package controls_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// Stock changes of one variant (POST /admin/sales/{id}/stock with "variant"). The crowd test
// and the crash-ordering tests are in controls_variant_race_test.go.

// A variant sells out at the gate; the operator adds units of it: the gate script sells it
// again (the restock event clears the gateways' local sold-out flags of the sale's variants),
// both stores move the variant and the totals together, the change is idempotent per request
// id and a request id reused for another variant is refused. Every wrong use of "variant"
// gets its stable code.
func TestUnitsAddedToASoldOutVariantAreSoldAgainOnceAndAudited(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	srv := e.ControlServer()
	sale := e.VariantSale(1, backend.VariantSpec{ID: "red", Stock: 1}, backend.VariantSpec{ID: "blue", Stock: 3})
	m1, _, ok := e.Buy(sale, "u1", "red", 1)
	if !ok {
		t.Fatal("the gate refused the first red unit")
	}
	if _, reply, ok := e.Buy(sale, "u2", "red", 1); ok || reply[0].(int64) != 6 || reply[1] != "red" {
		t.Fatalf("red is sold out, the gate answered %v", reply)
	}
	events := servicetest.Subscribe(t, e.Redis)
	path := "/admin/sales/" + sale + "/stock"
	body := `{"add":2,"request_id":"red-more","variant":"red"}`
	var res admin.ControlResult
	if code := servicetest.Call(t, srv, "POST", path, servicetest.AliceToken, body, &res); code != 200 {
		t.Fatalf("add 2 red: %d", code)
	}
	if v := res.Variant; v == nil || v.ID != "red" || v.InitialStock != 3 || v.StockDB != 3 || v.StockRedis == nil || *v.StockRedis != 2 {
		t.Fatalf("the answer's variant %+v, want red initial 3, Postgres 3, Redis 2", res.Variant)
	}
	if res.Sale.InitialStock != 6 || res.Sale.StockDB != 6 || *res.Sale.StockRedis != 5 || res.Sale.State != admin.SaleOpen {
		t.Fatalf("the answer's sale %+v, want totals 6 / 6 / Redis 5", res.Sale)
	}
	servicetest.Await(t, events, "restock:"+sale)
	if m := e.Meta(sale); m["v:red"] != "2" || m["v:blue"] != "3" || m["stock"] != "5" {
		t.Fatalf("Redis after the add: %v", m)
	}
	if init, st := e.VariantRow(sale, "red"); init != 3 || st != 3 {
		t.Fatalf("Postgres red: initial %d stock %d, want 3 and 3 (the order is not written yet)", init, st)
	}
	m2, reply, ok := e.Buy(sale, "u2", "red", 1)
	if !ok {
		t.Fatalf("after the add the gate still refuses red: %v", reply)
	}

	// Retries: the same change is answered from the journal, nothing moves; the same request
	// id for another variant (or another delta) is refused.
	if code := servicetest.Call(t, srv, "POST", path, servicetest.AliceToken, body, &res); code != 200 || !res.Replayed {
		t.Fatalf("replay: %d %+v", code, res)
	}
	var ref contract.Refusal
	for _, reused := range []string{`{"add":2,"request_id":"red-more","variant":"blue"}`, `{"add":3,"request_id":"red-more","variant":"red"}`,
		`{"add":2,"request_id":"red-more"}`} {
		if code := servicetest.Call(t, srv, "POST", path, servicetest.AliceToken, reused, &ref); code != 409 {
			t.Fatalf("%s: %d %+v", reused, code, ref)
		}
		if !strings.Contains(reused, "variant") {
			// Without a variant the sale's own refusal comes first.
			if ref.Code != "variant_sale" || !strings.Contains(ref.Message, "name the variant") {
				t.Fatalf("%s: %+v", reused, ref)
			}
		} else if ref.Code != "request_id_reused" {
			t.Fatalf("%s: %+v", reused, ref)
		}
	}
	if m := e.Meta(sale); m["v:red"] != "1" || m["stock"] != "4" {
		t.Fatalf("Redis after the retries: %v (the replay must not add again)", m)
	}

	// Wrong uses of "variant".
	plain := e.Sale(3)
	for _, c := range []struct {
		path, body string
		status     int
		code       string
	}{
		{path, `{"add":1,"request_id":"x1","variant":"green"}`, 400, contract.CodeBadRequest},
		{path, `{"add":1,"request_id":"x2","variant":"red/1"}`, 400, contract.CodeBadRequest},
		{path, `{"add":1,"request_id":"x3","variant":"` + strings.Repeat("r", 65) + `"}`, 400, contract.CodeBadRequest},
		{path, `{"add":1,"request_id":"x4","variant":7}`, 400, contract.CodeBadRequest},
		{path, `{"add":1,"request_id":"x5"}`, 409, "variant_sale"},
		{"/admin/sales/" + plain + "/stock", `{"add":1,"request_id":"x6","variant":"red"}`, 400, contract.CodeBadRequest},
	} {
		ref = contract.Refusal{}
		if code := servicetest.Call(t, srv, "POST", c.path, servicetest.AliceToken, c.body, &ref); code != c.status || ref.Code != c.code || ref.Message == "" {
			t.Errorf("%s %s: %d %+v, want %d %s", c.path, c.body, code, ref, c.status, c.code)
		}
	}
	if n := e.DBInt(`SELECT count(*) FROM stock_changes WHERE request_id LIKE 'x%' AND sale_id IN ($1, $2)`, sale, plain); n != 0 {
		t.Fatalf("%d refused requests were journaled", n)
	}

	// One audit row, with the variant's numbers before and after and the sale's beside them.
	entries := e.Audit(sale)
	if len(entries) != 1 || entries[0].Action != "stock" || entries[0].Who != "alice" {
		t.Fatalf("audit %+v", entries)
	}
	var before, after map[string]any
	if json.Unmarshal(entries[0].Before, &before) != nil || json.Unmarshal(entries[0].After, &after) != nil {
		t.Fatal("audit rows are not JSON")
	}
	if before["variant"] != "red" || before["stock_db"] != 1.0 || before["stock_redis"] != 0.0 || before["sale_stock_db"] != 4.0 ||
		after["variant"] != "red" || after["stock_db"] != 3.0 || after["initial_stock"] != 3.0 || after["stock_redis"] != 2.0 ||
		after["sale_initial_stock"] != 6.0 || after["add"] != 2.0 {
		t.Fatalf("audit before %v after %v", before, after)
	}

	// The orders written, Postgres and Redis agree per variant.
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(context.Background(), []contract.OrderMessage{m1, m2}); err != nil {
		t.Fatal(err)
	}
	if held := e.VariantUnits(sale); held["red"] != 2 {
		t.Fatalf("units held %v", held)
	}
	if rep, err := e.Svc.Reconciler.Reconcile(context.Background(), sale); err != nil || rep.StockDelta != 0 {
		t.Fatalf("reconcile after the change: %v %+v (the stores must agree)", err, rep)
	}
	if m := e.Meta(sale); m["v:red"] != "1" || m["stock"] != "4" {
		t.Fatalf("Redis after reconcile: %v", m)
	}
}

// Removing unsold units of a variant stops at zero: in Redis (units sold but not written yet
// are not unsold) and in Postgres; a refusal changes nothing, in either store, of any variant.
func TestRemovingAVariantsUnsoldUnitsStopsAtZeroInBothStores(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := servicetest.WithWho(context.Background())
	sale := e.VariantSale(2, backend.VariantSpec{ID: "a", Stock: 5}, backend.VariantSpec{ID: "b", Stock: 5})
	m, _, ok := e.Buy(sale, "u1", "a", 2) // Redis: a 3 unsold; Postgres still counts 5
	if !ok {
		t.Fatal("the gate refused")
	}
	for _, r := range []controls.StockRequest{{Add: -4, RequestID: "a-4", Variant: "a"}, {Add: -6, RequestID: "b-6", Variant: "b"}} {
		if _, err := e.Svc.Controls.ChangeStock(ctx, sale, r); err != controls.ErrInsufficient {
			t.Fatalf("%+v: %v, want insufficient_stock", r, err)
		}
	}
	if mm := e.Meta(sale); mm["v:a"] != "3" || mm["v:b"] != "5" || mm["stock"] != "8" {
		t.Fatalf("a refused removal changed Redis: %v", mm)
	}
	if _, st := e.VariantRow(sale, "a"); st != 5 || e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale) != 10 {
		t.Fatal("a refused removal changed Postgres")
	}
	res, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -3, RequestID: "a-3", Variant: "a"})
	if err != nil || res.Variant == nil || *res.Variant.StockRedis != 0 || res.Variant.StockDB != 2 || res.Sale.State != admin.SaleOpen {
		t.Fatalf("removing the 3 unsold of a: %v %+v", err, res)
	}
	if mm := e.Meta(sale); mm["v:a"] != "0" || mm["v:b"] != "5" || mm["stock"] != "5" {
		t.Fatalf("Redis after removing 3 of a: %v", mm)
	}
	if init, st := e.VariantRow(sale, "a"); init != 2 || st != 2 ||
		e.DBInt(`SELECT stock FROM sales WHERE id = $1`, sale) != 7 || e.DBInt(`SELECT initial_stock FROM sales WHERE id = $1`, sale) != 7 {
		t.Fatalf("Postgres after removing 3 of a: a %d/%d", init, st)
	}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -1, RequestID: "a-1", Variant: "a"}); err != controls.ErrInsufficient {
		t.Fatalf("removing from an empty variant: %v", err)
	}
	// The order in flight lands: it takes the last 2 of a in Postgres, nothing is short.
	if _, err := (&orders.Writer{Pool: e.Pool}).WriteBatch(context.Background(), []contract.OrderMessage{m}); err != nil {
		t.Fatal(err)
	}
	if held := e.VariantUnits(sale); held["a"] != 2 {
		t.Fatalf("units held %v, want a 2", held)
	}
	if _, st := e.VariantRow(sale, "a"); st != 0 {
		t.Fatalf("Postgres a stock %d, want 0", st)
	}
	// The whole of b goes: the sale is sold out.
	if res, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -5, RequestID: "b-5", Variant: "b"}); err != nil || res.Sale.State != admin.SaleSoldOut {
		t.Fatalf("removing all of b: %v %+v", err, res.Sale)
	}
	if _, reply, ok := e.Buy(sale, "u9", "b", 1); ok || reply[0].(int64) != 6 {
		t.Fatalf("a buyer of b after its units were removed: %v", reply)
	}
}

// A sharded variant sale keeps each shard's part of every variant: units added to a variant are
// spread over the shards as preheat spreads them (contract.SplitStock), removals take from the
// shards that hold most of it, each shard's total moves with its variant, and the other
// variants are left alone.
func TestStockOfAVariantOfAShardedSaleIsSpreadOverItsShards(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := servicetest.WithWho(context.Background())
	sale := e.ShardedVariantSale(3, 2, backend.VariantSpec{ID: "a", Stock: 7}, backend.VariantSpec{ID: "b", Stock: 2})
	ids := contract.ShardIDs(sale, 3)
	events := servicetest.Subscribe(t, e.Redis)
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: 5, RequestID: "sb5", Variant: "b"}); err != nil {
		t.Fatal(err)
	}
	servicetest.Await(t, events, "restock:"+sale)
	shard := func(f string) string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = e.Redis.HGet(context.Background(), contract.MetaKey(id), f).Val()
		}
		return fmt.Sprint(out)
	}
	// b was [1 1 0], a [3 2 2]; 5 more of b split as [2 2 1].
	if b, a, st := shard("v:b"), shard("v:a"), shard("stock"); b != "[3 3 1]" || a != "[3 2 2]" || st != "[6 5 3]" {
		t.Fatalf("shards: b %s a %s stock %s", b, a, st)
	}
	if init, st := e.VariantRow(sale, "b"); init != 7 || st != 7 || e.DBInt(`SELECT initial_stock FROM sales WHERE id = $1`, sale) != 14 {
		t.Fatalf("Postgres b %d/%d", init, st)
	}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -8, RequestID: "sb-8", Variant: "b"}); err != controls.ErrInsufficient {
		t.Fatalf("removing 8 of 7: %v", err)
	}
	if _, err := e.Svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -6, RequestID: "sb-6", Variant: "b"}); err != nil {
		t.Fatal(err)
	}
	if b, a, st := shard("v:b"), shard("v:a"), shard("stock"); b != "[0 0 1]" || a != "[3 2 2]" || st != "[3 2 3]" {
		t.Fatalf("after removing 6 of b: b %s a %s stock %s", b, a, st)
	}
	stat, err := e.Svc.Sales.SaleStatus(context.Background(), sale)
	if err != nil {
		t.Fatal(err)
	}
	if *stat.StockRedis != 8 || stat.StockDB != 8 || stat.Variants[1].ID != "b" || *stat.Variants[1].StockRedis != 1 || stat.Variants[1].StockDB != 1 {
		t.Fatalf("status %+v", stat)
	}
}
