//go:build integration

package deploy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	clientjs "github.com/seckilledge/seckill/clients/js"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The URL space of a shop that chose its own: every buyer route under /shop-api/drop, the
// order status route under it too, health on a path of its choosing.
const (
	shopPrefix = "/shop-api/drop"
	shopOrders = "/shop-api/drop/orders"
	shopHealth = "/edge-health"
)

// shopPageJS is a shop's front end on its own origin: the published client, told where the
// gateway and its routes are, with the buyer's cookie sent along (credentials "include").
const shopPageJS = `import { Client, SeckillError } from "/seckill.js";
const q = new URLSearchParams(location.search);
const c = new Client({ baseURL: q.get("edge"), prefix: q.get("prefix"), ordersPrefix: q.get("orders"), credentials: "include" });
window.purchase = async (sale) => {
  const steps = [];
  try {
    const { token } = await c.token(sale); steps.push("token");
    const b = await c.buy(sale, { token }); steps.push("buy");
    const o = await c.waitOrder(b.order_id, { intervalMs: 300 }); steps.push("order");
    return { ok: true, steps, order: b.order_id, status: o.status, user: o.user_id || "" };
  } catch (e) {
    return { ok: false, steps, refusal: e instanceof SeckillError, name: e.name, code: e.code || "", message: String(e.message) };
  }
};
document.body.dataset.ready = "yes";
`

// shopPage serves the shop's page, its script and the client, as a shop's own server would.
func shopPage(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<!doctype html><html><body><h1>The drop</h1><script type="module" src="/app.js"></script></body></html>`)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = io.WriteString(w, shopPageJS)
		case "/seckill.js":
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = io.WriteString(w, clientjs.Source)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A shop whose pages live on another origin than the gateway, with the edge under a prefix of
// its choosing: in Chromium, the shop's page takes a token, buys and reads the order status
// through the shipped production Caddyfile, the buyer known only by the shop's signed session
// cookie sent with the cross-origin requests; the gateway's own waiting page, under the prefix,
// sells too. The same shop page served from an origin not on the allow list gets nothing: its
// preflight and its requests are refused before any purchase. The old paths are the shop's again.
func TestAPageOnAnAllowedOriginBuysUnderTheShopsPrefixAndNoOtherOriginCan(t *testing.T) {
	testenv.NeedsServices(t, "the whole stack and Chromium")
	ctx := shopBrowser(t)
	allowed, other := shopPage(t), shopPage(t)

	g := &gateway{Shop: startShop(t, true)}
	shop := g.Shop.srv.URL
	s := startHarness(t, harness.Options{Caddyfile: productionCaddyfile, Env: []string{
		"SECKILL_JWKS_URL=" + shop + "/.well-known/jwks.json",
		"SECKILL_JWT_ISSUER=" + shop,
		"SECKILL_JWT_AUDIENCE=" + shopAudience,
		"SECKILL_SESSION_COOKIE=session",
		"SECKILL_SHOP=" + strings.TrimPrefix(shop, "http://"),
		"SECKILL_PREFIX=" + shopPrefix,
		"SECKILL_ORDERS_PREFIX=" + shopOrders,
		"SECKILL_HEALTH_PATH=" + shopHealth,
		"SECKILL_ALLOWED_ORIGINS=" + allowed.URL,
	}})
	g.Base, g.Admin = s.Gateways[0].URL, s.Backends[0].URL
	testenv.WaitFor(t, 20*time.Second, "the gateway's health on the shop's path", func() bool {
		resp, err := http.Get(g.Base + shopHealth)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && string(b) == "ok"
	})
	// /healthz and /seckill/ are not the edge's any more: they are the shop's pages.
	for _, p := range []string{"/healthz", "/seckill/s1/token", "/orders/o1"} {
		status, body := get(t, g.Base+p, nil)
		if status != http.StatusOK || body["shop"] != "page" {
			t.Errorf("GET %s: %d %v, want the shop's page", p, status, body)
		}
	}

	sale := g.newSale(t, 3)
	user := testenv.ID("buyer")
	session := g.Shop.signIn(user)
	// The shop's session cookie, as its sign-in would set it on its host: sent to the gateway
	// (same host, another port: same site) with credentials "include".
	setSession := func(token string) {
		t.Helper()
		httpOnly := true
		if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: "session", Value: token, URL: g.Base, Path: "/",
			HTTPOnly: &httpOnly, SameSite: network.CookieSameSiteLax}); err != nil {
			t.Fatal(err)
		}
	}
	setSession(session)

	purchase := func(page string) map[string]any {
		t.Helper()
		url := fmt.Sprintf("%s/?edge=%s&prefix=%s&orders=%s", page, g.Base, shopPrefix, shopOrders)
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		waitPage(t, ctx, "the shop's page", `document.body.dataset.ready === "yes"`, 20*time.Second)
		res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](fmt.Sprintf(`window.purchase(%q)`, sale), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// The page on the listed origin: token, purchase, order status, all cross-origin.
	res := purchase(allowed.URL)
	if res["ok"] != true || res["status"] != "created" {
		t.Fatalf("the purchase from the allowed origin %s: %v", allowed.URL, res)
	}
	order, _ := res["order"].(string)
	// The order is the signed-in buyer's: the gateway read the session cookie the page sent.
	status, body := get(t, g.Base+shopOrders+"/"+order, map[string]string{"Cookie": "session=" + session})
	if status != http.StatusOK || body["order_id"] != order {
		t.Errorf("GET %s/%s with the buyer's session: %d %v", shopOrders, order, status, body)
	}

	// The gateway's own waiting page, under the prefix: its client calls the challenge, the
	// queue, the token, the purchase and the order status where the gateway says they are.
	room := testenv.ID("room")
	openSale(t, g.Admin, room, 3, `,"room":{"rate":50,"oversubscribe":1.5,"session":"2m","prequeue":"15m","difficulty":[8,8]}`)
	setSession(g.Shop.signIn(testenv.ID("waiter")))
	if err := chromedp.Do(ctx, chromedp.Navigate(g.Base+shopPrefix+"/"+room+"/queue")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "admitted on the waiting page under the prefix: the Buy button",
		`!!document.getElementById("sk-buy") && !document.getElementById("sk-buy").hidden`, 60*time.Second)
	time.Sleep(1100 * time.Millisecond) // the user's 5-a-second window has counted the page's calls so far
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("sk-buy"))); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the order written, read at the orders prefix", `document.body.dataset.state === "bought" && document.getElementById("sk-detail").textContent === "Your order is confirmed."`, 60*time.Second)

	// The same page on another origin: the browser is refused before any purchase. A second
	// buyer, so that "already bought" cannot be the reason.
	setSession(g.Shop.signIn(testenv.ID("other")))
	res = purchase(other.URL)
	if res["ok"] != false || res["refusal"] != false || res["name"] != "TypeError" || len(res["steps"].([]any)) != 0 {
		t.Errorf("the purchase from the unlisted origin %s: %v, want a blocked fetch before the token", other.URL, res)
	}
	// What the browser was told, asked directly: the preflight is refused, a purchase from that
	// origin is cross_site, and neither answer lets the page read it.
	req, _ := http.NewRequest(http.MethodOptions, g.Base+shopPrefix+"/"+sale+"/token", nil)
	req.Header.Set("Origin", other.URL)
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("the unlisted origin's preflight: %d, Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	r := g.do(t, client{Cookie: g.Shop.signIn(testenv.ID("third")), IP: newIP()}, http.MethodPost, shopPrefix+"/"+sale+"/token", map[string]string{"Origin": other.URL})
	if r.Status != http.StatusForbidden || r.Code != "cross_site" {
		t.Errorf("a token from the unlisted origin: %d %s, want 403 cross_site", r.Status, r.Code)
	}
}
