package draw

import (
	"slices"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"

	_ "github.com/seckilledge/seckill/caddymodule/gate"
	_ "github.com/seckilledge/seckill/caddymodule/identity"
	_ "github.com/seckilledge/seckill/caddymodule/throttle"
	_ "github.com/seckilledge/seckill/caddymodule/token"
)

// Every shipped Caddyfile puts seckill_draw just before each seckill_room, in the same list of
// handlers (so the challenge of a draw sale is the draw's and every other request reaches the
// room), and proxies the draw's result, entries and proofs to the backend.
func TestShippedCaddyfilesServeTheDraw(t *testing.T) {
	handlertest.AdaptShipped(t, "../..", func(f string, cfg any) {
		rooms, draws, proxied := 0, 0, 0
		handlertest.WalkJSON(cfg, func(m map[string]any) {
			if hs, ok := m["handle"].([]any); ok {
				for i, h := range hs {
					if handlerName(h) == "seckill_room" {
						rooms++
						if i == 0 || handlerName(hs[i-1]) != "seckill_draw" {
							t.Errorf("%s: a seckill_room without seckill_draw just before it", f)
						}
					}
					if handlerName(h) == "seckill_draw" {
						draws++
					}
				}
			}
			if ms, ok := m["match"].([]any); ok && len(ms) == 1 {
				if p, ok := ms[0].(map[string]any)["path"].([]any); ok && slices.Contains(p, any("/seckill/*/draw/proof")) {
					var proxies bool
					handlertest.WalkJSON(m["handle"], func(h map[string]any) { proxies = proxies || h["handler"] == "reverse_proxy" })
					if proxies {
						proxied++
					}
				}
			}
		})
		sites := 1
		if f == "Caddyfile" { // the demo file: the :8080 and :8088 sites
			sites = 2
		}
		if rooms != sites || draws != sites || proxied != sites {
			t.Errorf("%s: %d seckill_room, %d seckill_draw, %d proxied draw backend routes; want %d of each", f, rooms, draws, proxied, sites)
		}
	})
}

func handlerName(h any) string {
	m, _ := h.(map[string]any)
	s, _ := m["handler"].(string)
	return s
}
