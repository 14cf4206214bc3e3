//go:build integration

package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// chromiumPath is Debian's headless browser (scripts/stack.sh installs it). A missing browser
// fails the test: the page must be proven in a real one.
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("headless Chromium is required at %s (apt-get install chromium; scripts/stack.sh does): %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.WindowSize(1500, 1300))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// sel is the CSS selector of a number on a sale's card.
func sel(sale, key string) string { return fmt.Sprintf(`#sale-%s [data-k="%s"]`, sale, key) }

// waitJS waits until the page's expression is true (chromedp polls it on animation frames).
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || !ok {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("%s: %v (page: %.2000s)", what, err, html)
	}
}

func textIs(selector, want string) string {
	return fmt.Sprintf(`(document.querySelector(%q)||{}).textContent === %q`, selector, want)
}

// The page, in Chromium: an admin signs in, watches a sale whose numbers move while orders
// flow through the real path (buyers in Redis, messages through RabbitMQ, the consumer writing
// Postgres), pauses it with the button (Redis meta state = paused on every gateway's view) and
// sees herself in the audit trail.
// Serial (no t.Parallel): it sets the environment the cockpit reads (t.Setenv).
func TestCockpitPageShowsALiveSaleAndItsPauseButtonPausesIt(t *testing.T) {
	e := servicetest.New(t)
	t.Setenv("SECKILL_AMQP_MGMT_URL", testenv.AMQPMgmtURL())
	t.Setenv("SECKILL_AMQP_URL", e.AMQP)
	t.Setenv("SECKILL_GATEWAY_METRICS", "")
	srv := e.ControlServer()
	e.StartConsumer(50)
	sale := e.Sale(40)
	ctx := browser(t)

	// Sign in through the login form; the page then lives on its cookie.
	signIn(t, ctx, srv.URL, sale)
	waitJS(t, ctx, "the sale's Redis stock", textIs(sel(sale, "stock_redis"), "40"))
	waitJS(t, ctx, "the signed-in admin", textIs("#who", "alice"))

	// A small sale, a few buyers a second, through the real pipeline.
	// The page refreshes on its own (SSE) while the buyers come.
	sold := 0
	for i := 0; i < 8; i++ {
		msgs := e.Accept(sale, 2+i%3)
		servicetest.Publish(t, e.AMQP, sale, servicetest.Bodies(msgs))
		sold += len(msgs)
		time.Sleep(400 * time.Millisecond) // the pace of the sale, not a synchronisation
	}
	waitJS(t, ctx, "orders created on the page", textIs(sel(sale, "created"), fmt.Sprint(sold)))
	waitJS(t, ctx, "Redis stock on the page", textIs(sel(sale, "stock_redis"), fmt.Sprint(40-sold)))
	waitJS(t, ctx, "Postgres stock on the page", textIs(sel(sale, "stock_db"), fmt.Sprint(40-sold)))
	waitJS(t, ctx, "the charts drawn", fmt.Sprintf(`document.querySelectorAll('#sale-%s polyline').length >= 8`, sale))
	// The pause button, confirmed in the dialog.
	events := servicetest.Subscribe(t, e.Redis)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#sale-`+sale+` button[data-act="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	); err != nil {
		t.Fatal(err)
	}
	servicetest.Await(t, events, "paused:"+sale)
	if st := e.Redis.HGet(context.Background(), contract.MetaKey(sale), contract.FieldState).Val(); st != "paused" {
		t.Fatalf("meta state after the button: %q", st)
	}
	waitJS(t, ctx, "the paused badge", textIs(sel(sale, "state"), "paused"))
	waitJS(t, ctx, "the audit trail names alice", fmt.Sprintf(`[...document.querySelectorAll('#audit tr')].some(r => r.textContent.includes('alice') && r.textContent.includes('pause') && r.textContent.includes(%q))`, sale))
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#audit tr`)))
	if err != nil || !strings.Contains(row, "paused") {
		t.Fatalf("audit row %q: %v", row, err)
	}
	// docs/img/cockpit.png is this moment: SECKILL_COCKPIT_SCREENSHOT=docs/img/cockpit.png.
	if dst := os.Getenv("SECKILL_COCKPIT_SCREENSHOT"); dst != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Clean(dst), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// signIn opens the live page at base, signs in as alice through the login form (the page then
// lives on its cookie) and waits for sale's row.
func signIn(t *testing.T, ctx context.Context, base, sale string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/admin/ui"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), servicetest.AliceToken),
		chromedp.Click(chromedp.CSS(`#login`)),
		chromedp.WaitVisible(chromedp.CSS(`#sale-`+sale)),
	); err != nil {
		t.Fatal(err)
	}
}
