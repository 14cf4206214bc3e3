//go:build integration

package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// buyVariant sends one purchase of variant as user.
func buyVariant(t testing.TB, base, sale, user, variant string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/seckill/"+sale+"/buy", strings.NewReader(`{"variant":"`+variant+`"}`))
	req.Header.Set("X-User-ID", user)
	req.Header.Set("Content-Type", "application/json")
	resp, err := checked(t).Do(req)
	if err != nil {
		t.Fatalf("buy: %v", err)
	}
	defer resp.Body.Close()
	a := answer{Status: resp.StatusCode}
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return a
}

// A gateway (Caddy with the seckill modules, in this process) answers a sold-out variant from
// its local flag (sold_out:<sale>/<variant>, no script call); the operator adds units of that
// variant through the admin API ({"variant"}): the gateway sells the variant again within a
// second, because the stock change publishes restock:<sale>, which clears the sale's flags and
// its variants'. Meanwhile the other variant sold all along.
func TestAGatewaySellsASoldOutVariantAgainOnceTheOperatorAddsUnitsOfIt(t *testing.T) {
	s := newSystem(t)
	s.admin()
	ctx := context.Background()
	sale := testenv.ID("sv")
	now := time.Now()
	if _, err := s.svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: sale, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		Variants: []backend.VariantSpec{{ID: "red", Stock: 1}, {ID: "blue", Stock: 50}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.rdb.SRem(ctx, contract.SalesIndexKey, sale)
		s.rdb.Del(ctx, contract.MetaKey(sale), contract.BuyersKey(sale), contract.HeldKey(sale), contract.OutboxKey(sale),
			contract.TokensKey(sale), "seckill:"+contract.SaleTag(sale)+":stock_requests")
	})
	if _, err := s.svc.Sales.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	port, adminPort := testenv.FreePort(t), testenv.FreePort(t)
	g := gateway{Name: "gateway", Base: startCaddy(t, port, s.gatewayJSON(port, adminPort, false)),
		Admin: fmt.Sprintf("http://127.0.0.1:%d", adminPort)}

	if a := buyVariant(t, g.Base, sale, "first", "red"); a.Status != http.StatusAccepted {
		t.Fatalf("the last red unit: %+v", a)
	}
	// The gateway must hold red's local sold-out flag before the add, else the add proves
	// nothing: a sold_out answer without a script call is the flag.
	testenv.WaitFor(t, 10*time.Second, "the gateway's local sold-out flag of red", func() bool {
		before := g.scriptCalls(t)
		a := buyVariant(t, g.Base, sale, testenv.ID("late-"), "red")
		return a.Code == "sold_out" && g.scriptCalls(t) == before
	})
	if a := buyVariant(t, g.Base, sale, testenv.ID("blue-"), "blue"); a.Status != http.StatusAccepted {
		t.Fatalf("blue while red is sold out: %+v", a)
	}

	start := time.Now()
	code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale+"/stock", `{"add":2,"request_id":"sys-red-`+sale+`","variant":"red"}`)
	if code != http.StatusOK {
		t.Fatalf("stock add of red: %d %v", code, body)
	}
	if v, _ := body["variant"].(map[string]any); v["id"] != "red" || v["stock_redis"] != 2.0 {
		t.Fatalf("the answer's variant: %v", body)
	}
	within(t, "selling red again after the stock add", []gateway{g}, start, time.Second,
		func(g gateway, i int) answer {
			return buyVariant(t, g.Base, sale, fmt.Sprintf("restocked-%d", i), "red")
		}, is(http.StatusAccepted, ""))
	// Without "variant" such a sale refuses, as before.
	if code, body := s.control(aliceToken, http.MethodPost, "/admin/sales/"+sale+"/stock", `{"add":2,"request_id":"sys-none-`+sale+`"}`); code != http.StatusConflict || body["code"] != "variant_sale" {
		t.Fatalf("a stock add without a variant: %d %v", code, body)
	}
}
