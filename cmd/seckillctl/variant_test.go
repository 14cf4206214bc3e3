//go:build integration

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// stock add|remove -variant changes one variant's units of a sale with variants; without it
// such a sale refuses with variant_sale.
func TestSeckillctlChangesTheStockOfOneVariant(t *testing.T) {
	srv, svc := backendServer(t)
	ctx := context.Background()
	sale := testenv.ID("ctlv")
	t.Cleanup(func() {
		svc.Sales.Redis.Del(ctx, contract.MetaKey(sale), contract.BuyersKey(sale), contract.HeldKey(sale), "seckill:"+contract.SaleTag(sale)+":stock_requests")
		svc.Sales.Redis.SRem(ctx, contract.SalesIndexKey, sale)
	})
	now := time.Now()
	if _, err := svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: sale, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		Variants: []backend.VariantSpec{{ID: "red", Stock: 2}, {ID: "blue", Stock: 4}}}); err != nil {
		t.Fatal(err)
	}
	mustCtl(t, srv, "preheat", sale)
	out := mustCtl(t, srv, "stock", "add", sale, "3", "-variant", "red", "-request-id", "ctl-red")
	for _, want := range []string{"variant red", "variant in Redis 5", "variant in Postgres 5", "stock in Redis 9"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Fatalf("stock add -variant red: no %q in\n%s", want, out)
		}
	}
	if out := mustCtl(t, srv, "stock", "add", sale, "3", "-variant", "red", "-request-id", "ctl-red"); !strings.Contains(out, "already applied") {
		t.Fatalf("retried: %s", out)
	}
	if code, _, errs := ctl(t, srv, adminToken, "stock", "add", sale, "3", "-variant", "blue", "-request-id", "ctl-red"); code != 1 || !strings.Contains(errs, "request_id_reused") {
		t.Fatalf("the request id again for blue: exit %d %s", code, errs)
	}
	mustCtl(t, srv, "stock", "remove", sale, "4", "-variant", "blue")
	if m := svc.Sales.Redis.HGetAll(ctx, contract.MetaKey(sale)).Val(); m["v:red"] != "5" || m["v:blue"] != "0" || m["stock"] != "5" {
		t.Fatalf("Redis after the changes: %v", m)
	}
	if code, _, errs := ctl(t, srv, adminToken, "stock", "add", sale, "1"); code != 1 || !strings.Contains(errs, "variant_sale") {
		t.Fatalf("without -variant: exit %d %s", code, errs)
	}
	if code, _, errs := ctl(t, srv, adminToken, "stock", "add", sale, "1", "-variant", "green"); code != 1 || !strings.Contains(errs, "bad_request") {
		t.Fatalf("an unknown variant: exit %d %s", code, errs)
	}
}
