//go:build integration

package room

import (
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// widgetTurnstile is the stand-in provider of widgetGateway's room.
var widgetTurnstile botchecktest.Turnstile

var widgetGateway = gateway(gatewayConfig{Setup: func(tb testing.TB, c *gatewayConfig) {
	widgetTurnstile = botchecktest.NewTurnstile(tb)
	c.Room = map[string]any{"challenge_provider": widgetTurnstile.Provider}
}})

// A room with Turnstile: the page, in each of its languages, shows the widget with its label
// in that language, loads the provider's script (a stand-in served here, which the page's CSP
// allows because the site names it), and enters with the widget's token, checked by the
// stand-in siteverify once per entry.
func TestTheWaitingPageShowsTheProvidersWidgetInEveryLanguageAndEntersWithItsToken(t *testing.T) {
	pagetest.WidgetSweep(t, pagetest.Widget{Kind: pageKind, Turnstile: &widgetTurnstile, Entered: []string{"waiting", "admitted"},
		Page: func(t *testing.T) string {
			r := newRoom(t, testenv.Redis(t), 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
			return widgetGateway.Base(t) + "/seckill/" + r.Sale + "/queue"
		}})
}
