//go:build integration

package ui_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
)

// The cockpit's "Add stock…" button on a sale with variants: the dialog takes the number and
// the variant ("3 red"), and the page sends {"add", "request_id", "variant"}; a number alone
// is refused by the backend (409 variant_sale) and the page says so.
// Serial (no t.Parallel): it sets the environment the cockpit reads (t.Setenv).
func TestCockpitAddsStockToOneVariant(t *testing.T) {
	e := servicetest.New(t)
	t.Setenv("SECKILL_GATEWAY_METRICS", "")
	srv := e.ControlServer()
	sale := e.VariantSale(1, backend.VariantSpec{ID: "red", Stock: 1}, backend.VariantSpec{ID: "blue", Stock: 2})
	ctx := browser(t)
	signIn(t, ctx, srv.URL, sale)
	add := func(input string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS(`#sale-`+sale+` button[data-act="add"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#confirm-input`)),
			chromedp.SetValue(chromedp.CSS(`#confirm-input`), input),
			chromedp.Click(chromedp.CSS(`#confirm-ok`)),
		); err != nil {
			t.Fatal(err)
		}
	}
	events := servicetest.Subscribe(t, e.Redis)
	add("3 red")
	servicetest.Await(t, events, "restock:"+sale)
	if m := e.Redis.HGetAll(context.Background(), contract.MetaKey(sale)).Val(); m["v:red"] != "4" || m["v:blue"] != "2" || m["stock"] != "6" {
		t.Fatalf("Redis after the button: %v", m)
	}
	waitJS(t, ctx, "the page's Redis stock", textIs(sel(sale, "stock_redis"), "6"))
	add("2")
	waitJS(t, ctx, "the refusal shown", `document.body.textContent.includes("variant_sale")`)
	if n := e.DBInt(`SELECT count(*) FROM audit_log WHERE sale_id = $1`, sale); n != 1 {
		t.Fatalf("%d audit rows, want 1 (the refused add changes nothing)", n)
	}
}
