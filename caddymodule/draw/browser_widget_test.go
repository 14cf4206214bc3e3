//go:build integration

package draw

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A draw with Turnstile (widgetTurnstile, the stand-in of widgetGateway's draw): the entry
// page, in each of its languages, shows the widget with its label in that language, loads the
// provider's script (a stand-in served here, which the page's CSP allows because the site
// names it), and enters the draw with the widget's token, checked by the stand-in siteverify
// once per entry.
func TestTheDrawPageShowsTheProvidersWidgetInEveryLanguageAndEntersWithItsToken(t *testing.T) {
	pagetest.WidgetSweep(t, pagetest.Widget{Kind: pageKind, Turnstile: &widgetTurnstile, Ready: "none", Entered: []string{"entered"},
		Page: func(t *testing.T) string {
			sale := newDraw(t, testenv.Redis(t), drawArgs{Variants: map[string]int{"42": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour})
			return widgetGateway.Base(t) + "/seckill/" + sale + "/draw"
		},
		// The buyer picks his size and enters.
		Enter: func(t *testing.T, ctx context.Context, lang string) {
			if _, err := chromedp.Run(ctx, chromedp.SetValue(chromedp.ID("sk-size"), "42")); err != nil {
				t.Fatalf("pick the size (%s): %v", lang, err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID("sk-enter"))); err != nil {
				t.Fatalf("enter (%s): %v", lang, err)
			}
		}})
}

var (
	widgetTurnstile botchecktest.Turnstile
	widgetGateway   = gateway(gatewayConfig{Setup: func(tb testing.TB, c *gatewayConfig) {
		widgetTurnstile = botchecktest.NewTurnstile(tb)
		c.Draw = map[string]any{"challenge_provider": widgetTurnstile.Provider}
	}})
)
