package conformance

import (
	"slices"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"

	_ "github.com/seckilledge/seckill" // every module the shipped Caddyfiles name
)

// Every shipped Caddyfile puts its rooms behind a throttle with a user zone, so each
// seckill_room names that zone in ban_zones: a user the throttle bans cannot buy,
// and his admission is passed on at once instead of sitting unused for a session. Each zone
// named must be a seckill_throttle zone of the same file keyed on the room's own user id,
// else the room would read bans of other people.
func TestShippedCaddyfilesPassOnTheAdmissionsOfBannedUsers(t *testing.T) {
	handlertest.AdaptShipped(t, "../..", func(f string, cfg any) {
		zones := map[string]map[string]bool{} // zone name -> its keys
		var rooms []map[string]any
		handlertest.WalkJSON(cfg, func(m map[string]any) {
			switch m["handler"] {
			case "seckill_throttle":
				zs, _ := m["zones"].([]any)
				for _, z := range zs {
					zm, _ := z.(map[string]any)
					name, _ := zm["name"].(string)
					key, _ := zm["key"].(string)
					if zones[name] == nil {
						zones[name] = map[string]bool{}
					}
					zones[name][key] = true
				}
			case "seckill_room":
				rooms = append(rooms, m)
			}
		})
		if len(rooms) == 0 {
			t.Fatalf("%s: no seckill_room", f)
		}
		for _, r := range rooms {
			user, _ := r["user"].(string)
			names, _ := r["ban_zones"].([]any)
			if len(names) == 0 {
				t.Errorf("%s: a seckill_room (user %s) without ban_zones", f, user)
			}
			for _, n := range names {
				name, _ := n.(string)
				if !zones[name][user] {
					t.Errorf("%s: ban_zones names %q, but no throttle zone of that name is keyed on the room's user %s (zones: %v)", f, name, user, zones[name])
				}
			}
		}
	})
}

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

// Every shipped Caddyfile proxies a sale's fairness report, its evidence and the report keys
// to the backend (docs/operator.md, "The fairness report"), in each site: the report's page and
// `seckill-bench verify-report -url <gateway>` read them from the gateway.
func TestShippedCaddyfilesServeTheFairnessReport(t *testing.T) {
	handlertest.AdaptShipped(t, "../..", func(f string, cfg any) {
		proxied := 0
		handlertest.WalkJSON(cfg, func(m map[string]any) {
			ms, ok := m["match"].([]any)
			if !ok || len(ms) != 1 {
				return
			}
			p, _ := ms[0].(map[string]any)["path"].([]any)
			for _, want := range []string{"/seckill/*/report", "/seckill/*/report/evidence", "/.well-known/seckill-report-keys"} {
				if !slices.Contains(p, any(want)) {
					return
				}
			}
			var proxies bool
			handlertest.WalkJSON(m["handle"], func(h map[string]any) { proxies = proxies || h["handler"] == "reverse_proxy" })
			if proxies {
				proxied++
			}
		})
		sites := 1
		if f == "Caddyfile" { // the demo file: the :8080 and :8088 sites
			sites = 2
		}
		if proxied != sites {
			t.Errorf("%s: %d proxied report routes, want %d", f, proxied, sites)
		}
	})
}
