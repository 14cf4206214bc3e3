//go:build integration

package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/contract"
	sampleshop "github.com/seckilledge/seckill/examples/shop"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/testenv"
)

// chromiumPath is Debian's headless browser (scripts/stack.sh installs it). Missing, the test
// fails: the flow must be proven in a real browser.
const chromiumPath = "/usr/bin/chromium"

// shopStack is make run's production shape (internal/harness): the root Caddyfile's :8088
// site (moved to a free port), the sample shop (in this process), the backend with the shop's
// token and webhooks, on a private Redis, a RabbitMQ vhost and a Postgres database.
type shopStack struct {
	Base  string // the gateway's shop site: the one origin a buyer sees
	Shop  string // the sample shop itself (its webhook list is not served through the gateway)
	Admin string // the backend's admin listener
}

const (
	shopTestToken     = "deploy-test-shop-token-0123456789"
	shopWebhookSecret = "deploy-test-webhook-secret-0123456789"
)

func startShopStack(t *testing.T, sales ...string) *shopStack {
	t.Helper()
	// The sample shop must know the gateway's and the backend's URLs, the gateway and the
	// backend the shop's: its listener comes first, and answers once the shop is built.
	var shopHandler http.Handler
	shopReady := make(chan struct{})
	shopSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-shopReady:
			shopHandler.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(shopSrv.Close)

	// The gateway serves the root Caddyfile's :8088 site, as make run does; the backend has
	// the environment scripts/run.sh gives it.
	s := startHarness(t, harness.Options{Caddyfile: demoCaddyfile, ShopSite: true, Env: []string{
		"SECKILL_ADMIN_TOKENS=shop:" + shopTestToken + ":shop",
		"SECKILL_WEBHOOK_SECRETS=" + shopWebhookSecret,
		"SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32",
		"SECKILL_WEBHOOK_URL=" + shopSrv.URL + "/webhooks",
		"SECKILL_WEBHOOK_RETRY_MIN=200ms",
		"SECKILL_SHOP=" + strings.TrimPrefix(shopSrv.URL, "http://"),
	}})
	st := &shopStack{Base: s.Gateways[0].URL, Admin: s.Backends[0].URL, Shop: shopSrv.URL}

	// The sample shop, as cmd/seckill-shop runs it: its sessions' issuer is the site buyers
	// open, it confirms payments on the backend's admin listener with its shop token.
	key, err := sampleshop.LoadOrCreateKey("")
	if err != nil {
		t.Fatal(err)
	}
	sample, err := sampleshop.New(sampleshop.Config{PublicURL: st.Base, BackendAdmin: st.Admin, ShopToken: shopTestToken,
		WebhookSecret: shopWebhookSecret, Sales: sales, SessionTTL: time.Hour, Events: 100, Demo: true},
		key, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	shopHandler = sample.Handler()
	close(shopReady)
	(&gateway{Base: st.Base}).waitGateway(t)
	return st
}

// roomSale creates sale, open now behind a waiting room with a light proof of work, and
// preheats it.
func (st *shopStack) roomSale(t *testing.T, sale string, stock int) {
	t.Helper()
	openSale(t, st.Admin, sale, stock, `,"room":{"rate":50,"oversubscribe":1.5,"session":"2m","prequeue":"15m","difficulty":[8,8]}`)
}

// get sends a GET with extra headers and decodes the JSON answer.
func get(t *testing.T, url string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func shopBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("headless Chromium is required at %s (apt-get install chromium; scripts/stack.sh does): %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 150*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// waitPage waits until expr is true in the page. It asks again while the page navigates (a
// form post, a link, a reload): the question then fails and is asked of the next page.
func waitPage(t *testing.T, ctx context.Context, what, expr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
	t.Fatalf("%s: not within %s (last error %v; page: %.3000s)", what, within, err, html)
}

// make run's :8088 in a real browser: a buyer signs in at the shop, follows the shop's link into
// a sale's waiting room, is admitted and buys on the waiting page, pays with the shop's button
// (the shop confirms to the backend with its shop token), and sees the order paid; the gateway
// knew the buyer only by the shop's signed cookie, and the backend's webhooks reached the shop
// signed.
func TestABuyerSignedInAtTheShopBuysThroughTheRoomAndTheShopGetsPaid(t *testing.T) {
	testenv.NeedsServices(t, "the whole stack and Chromium")
	ctx := shopBrowser(t)
	sale := testenv.ID("room")
	st := startShopStack(t, sale)
	st.roomSale(t, sale, 5)
	user := testenv.ID("buyer")

	// 1. Sign in at the shop, through the gateway.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(st.Base+"/"),
		chromedp.WaitVisible(chromedp.ID("user")),
		chromedp.SendKeys(chromedp.ID("user"), user),
		chromedp.Click(chromedp.ID("signin")),
	); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	waitPage(t, ctx, "signed in", fmt.Sprintf(`(document.getElementById("signed-in")||{}).textContent === %q`, user), 20*time.Second)

	// 2. The shop's link into the sale's waiting room (the page asked the gateway which sales
	//    have one), then the waiting page: proof of work, admission, the Buy button.
	waitPage(t, ctx, "the waiting room link", fmt.Sprintf(`!!document.getElementById(%q)`, "room-"+sale), 20*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("room-"+sale))); err != nil {
		t.Fatalf("following the waiting room link: %v", err)
	}
	waitPage(t, ctx, "admitted: the Buy button", `!!document.getElementById("sk-buy") && !document.getElementById("sk-buy").hidden`, 60*time.Second)
	// A person reads "It is your turn" before clicking. The user's throttle window (5 calls a
	// second under /seckill/, as on :8080) has just counted the shop page's room check, the
	// waiting page, its challenge, its entry and its token: a sixth call in that second is 429.
	time.Sleep(1100 * time.Millisecond)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("sk-buy"))); err != nil {
		t.Fatalf("click Buy: %v", err)
	}
	// The page says so once the order is written (created): "Your order is confirmed."
	waitPage(t, ctx, "the order written (created)", `document.body.dataset.state === "bought" && document.getElementById("sk-detail").textContent === "Your order is confirmed."`, 60*time.Second)
	order, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sk-order").textContent`))
	if err != nil || !contract.ValidID(order) {
		t.Fatalf("order id on the waiting page: %q %v", order, err)
	}

	// 3. Back at the shop: the order.created webhook put the order on the buyer's page, with a
	//    Pay button. The shop's page is shown again until it has arrived.
	payID := "pay-" + order
	testenv.WaitFor(t, 30*time.Second, "the order with a Pay button on the shop's page", func() bool {
		if err := chromedp.Do(ctx, chromedp.Navigate(st.Base+"/")); err != nil {
			t.Fatal(err)
		}
		ok, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.getElementById(%q)`, payID)))
		return ok
	})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(payID))); err != nil {
		t.Fatalf("click Pay: %v", err)
	}
	waitPage(t, ctx, "the order paid on the shop's page",
		fmt.Sprintf(`(document.querySelector("#order-%s .status")||{}).textContent === "paid" && document.getElementById("notice").textContent.includes("Payment confirmed")`, order),
		20*time.Second)

	// 4. The order as the buyer's browser reads it through the gateway, with its cookie only.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`fetch("/orders/%s", {credentials: "same-origin"}).then(r => r.json()).then(b => b.status + "/" + b.order_id)`, order),
		chromedp.EvalAwaitPromise))
	if err != nil || status != contract.StatusPaid+"/"+order {
		t.Fatalf("GET /orders/%s through the gateway with the cookie: %q %v", order, status, err)
	}
	// Without the cookie nobody is anybody, whatever header they send.
	for name, hdr := range map[string]map[string]string{
		"no session":        nil,
		"a claimed user":    {"X-User-ID": user},
		"a forged session":  {"Cookie": sampleshop.CookieName + "=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."},
		"a foreign session": {"Authorization": "Bearer " + foreignSession(t, st.Base, user)},
	} {
		if code, body := get(t, st.Base+"/orders/"+order, hdr); code != http.StatusUnauthorized || body["code"] != contract.CodeUnauthenticated {
			t.Errorf("%s: GET /orders/%s answered %d %v, want 401 unauthenticated", name, order, code, body)
		}
	}

	// 5. The webhooks reached the shop, signed with the secret it checks: order.created and
	//    order.paid of this order, both verified.
	testenv.WaitFor(t, 30*time.Second, "order.created and order.paid at the shop, verified", func() bool {
		_, body := get(t, st.Shop+"/webhooks", map[string]string{"Authorization": "Bearer " + shopTestToken})
		raw, _ := json.Marshal(body["deliveries"])
		var ds []sampleshop.Delivery
		_ = json.Unmarshal(raw, &ds)
		seen := map[string]bool{}
		for _, d := range ds {
			if d.Verified && d.Event != nil && d.Event.OrderID == order && d.Event.UserID == user && d.Event.SaleID == sale {
				seen[d.Event.Type] = true
			}
		}
		return seen[contract.EventOrderCreated] && seen[contract.EventOrderPaid]
	})
	// The webhook list is the shop's, not the public site's.
	if code, _ := get(t, st.Base+"/webhooks", nil); code != http.StatusNotFound {
		t.Errorf("GET /webhooks through the gateway: %d, want 404", code)
	}
}

// foreignSession is a well-formed session for user, for the right issuer and audience, signed
// with a key the shop never published.
func foreignSession(t *testing.T, issuer, user string) string {
	t.Helper()
	key, err := sampleshop.LoadOrCreateKey("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sampleshop.NewSessions(key, issuer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Issue(user, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
