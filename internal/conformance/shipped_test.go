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

// Every shipped site matches the edge's paths with ONE top-level route, its first: matched by
// the prefix alone (`path /seckill/*`, no expression, no other glob), with the token issuer, the
// gate, the draw and the room standing in it flat (no subroute), after the throttle (and the
// identity, where the site has one) right before them. The seckill app dispatches that route
// by path (caddymodule/floor.go, handler.Dispatch), so a purchase, a token or a poll pays one
// route's matcher, set-up and metrics, and runs no other route's matchers; and the throttle
// stands right before the decisions, so its zones run in their one script call. No other
// route of the site holds a token issuer, a gate or a room. deploy/Caddyfile.production-session
// keeps its network zones before the session lookup, which only a `route` block can order (the
// route's one handler is then a subroute of one route, holding them flat; docs/gate.md, "One
// route for the edge's paths", says why).
func TestShippedCaddyfilesMatchTheEdgesPathsWithOneRoute(t *testing.T) {
	handlertest.AdaptShipped(t, "../..", func(f string, cfg any) {
		servers, _ := dig(cfg, "apps", "http", "servers").(map[string]any)
		sites := 0
		for name, s := range servers {
			routes, _ := s.(map[string]any)["routes"].([]any)
			edge := 0
			handlertest.WalkJSON(routes, func(m map[string]any) {
				if m["handler"] == "seckill_gate" {
					edge++
				}
			})
			if edge == 0 {
				continue
			}
			sites++
			if edge != 1 {
				t.Errorf("%s, server %s: %d seckill_gate, want one (in the edge's route)", f, name, edge)
			}
			first, _ := routes[0].(map[string]any)
			ms, _ := first["match"].([]any)
			if len(ms) != 1 {
				t.Errorf("%s, server %s: the first route has %d matcher sets, want one (the prefix): %v", f, name, len(ms), first["match"])
				continue
			}
			set, _ := ms[0].(map[string]any)
			paths, _ := set["path"].([]any)
			if len(set) != 1 || len(paths) != 1 || paths[0] != "/seckill/*" {
				t.Errorf("%s, server %s: the first route's matcher is %v, want only path /seckill/*", f, name, set)
			}
			handlers, _ := first["handle"].([]any)
			if f == "deploy/Caddyfile.production-session" && len(handlers) == 1 && handlerName(handlers[0]) == "subroute" {
				sub, _ := dig(handlers[0], "routes").([]any)
				if len(sub) != 1 || dig(sub[0], "match") != nil {
					t.Errorf("%s, server %s: the edge's route's subroute has %d routes, want one without a matcher", f, name, len(sub))
					continue
				}
				handlers, _ = dig(sub[0], "handle").([]any)
			}
			var names []string
			for _, h := range handlers {
				names = append(names, handlerName(h))
			}
			at := func(n string) int { return slices.Index(names, n) }
			tok, gate, draw, room := at("seckill_token"), at("seckill_gate"), at("seckill_draw"), at("seckill_room")
			if tok < 0 || gate != tok+1 || draw != gate+1 || room != draw+1 {
				t.Errorf("%s, server %s: the first route's handlers are %v, want seckill_token, seckill_gate, seckill_draw and seckill_room flat in it, in that order", f, name, names)
				continue
			}
			if tok == 0 || names[tok-1] != "seckill_throttle" {
				t.Errorf("%s, server %s: the edge's route is %v: no seckill_throttle right before seckill_token (its zones would not join the decisions' script call)", f, name, names)
			}
			for i, r := range routes[1:] {
				var others []string
				handlertest.WalkJSON(r, func(m map[string]any) {
					if n, _ := m["handler"].(string); n == "seckill_token" || n == "seckill_gate" || n == "seckill_room" {
						others = append(others, n)
					}
				})
				if len(others) > 0 {
					t.Errorf("%s, server %s: route %d holds %v outside the edge's route", f, name, i+1, others)
				}
			}
		}
		want := 1
		if f == "Caddyfile" { // the demo file: the :8080 and :8088 sites
			want = 2
		}
		if sites != want {
			t.Errorf("%s: %d sites with the edge's route, want %d", f, sites, want)
		}
	})
}

// dig is the value at keys in nested JSON objects, or nil.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
