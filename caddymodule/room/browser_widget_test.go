//go:build integration

package room

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A room with Turnstile: the page, in each of its languages, shows the widget with its label
// in that language, loads the provider's script (a stand-in served here, which the page's CSP
// allows because the site names it), and enters with the widget's token, checked by the
// stand-in siteverify once per entry.
func TestTheWaitingPageShowsTheProvidersWidgetInEveryLanguageAndEntersWithItsToken(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium: not in -short")
	}
	rdb := testenv.Redis(t)
	ts := botchecktest.NewTurnstile(t)
	sv := ts.Siteverify
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.Room = map[string]any{"challenge_provider": ts.Provider}
	gw := startCaddy(t, cfg)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	kit, err := pagekit.New(pageKind, pagekit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The CSP names the widget's origin, and the page the widget's element and script.
	pagetest.AllowsWidget(t, gw+"/seckill/"+r.Sale+"/queue?lang=en", ts.Script.URL)

	ctx := pagetest.Context(t, 5*time.Minute)
	calls := sv.Calls.Load()
	for i, l := range pagetest.Languages {
		user := "w-" + strings.ToLower(strings.ReplaceAll(l.Lang, "-", ""))
		if _, err := chromedp.Run(ctx, chromedp.Navigate(gw+"/seckill/"+r.Sale+"/queue?lang="+l.Lang+"&user="+user)); err != nil {
			t.Fatalf("navigate (%s): %v", l.Lang, err)
		}
		want := kit.Message(l.Lang, "common.challenge")
		if want == "" || (l.Lang != "en" && want == kit.Message("en", "common.challenge")) {
			t.Fatalf("the catalogue of %s has no translated common.challenge: %q", l.Lang, want)
		}
		if got := pagetest.TextIn(t, ctx, "widget-label"); got != want {
			t.Fatalf("the widget's label in %s is %q, want %q", l.Lang, got, want)
		}
		// The stand-in fills the token; the page enters with it.
		for s := pagetest.StateIn(t, ctx); s != "waiting" && s != "admitted"; s = pagetest.StateIn(t, ctx) {
			if ctx.Err() != nil {
				t.Fatalf("the page (%s) is %q, never in line", l.Lang, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := sv.Last().Get("response"); got != "human" {
			t.Fatalf("siteverify was asked about %q, want the widget's token", got)
		}
		if n := sv.Calls.Load() - calls; n != int64(i+1) {
			t.Fatalf("after %d pages' entries siteverify was asked %d times, want once per entry", i+1, n)
		}
	}
}
