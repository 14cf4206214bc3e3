package conformance

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// The room's routes: each path reaches its endpoint, with or without a trailing slash, and a
// path of none reaches nothing.
func TestRoutesSendEachPathToTheEndpointItEndsWith(t *testing.T) {
	rs := handler.NewRoutes(
		handler.Route{Suffix: "/room/prequeue", Endpoint: "prequeue"}, handler.Route{Suffix: "/room", Endpoint: "room"},
		handler.Route{Suffix: "/draw/challenge", Endpoint: "draw_challenge"}, handler.Route{Suffix: "/challenge", Endpoint: "challenge"},
		handler.Route{Suffix: "/queue", Endpoint: "queue"})
	for path, want := range map[string]string{
		"/seckill/s1/room":           "room",
		"/seckill/s1/room/":          "room",
		"/seckill/s1/room/prequeue":  "prequeue",
		"/seckill/s1/room/prequeue/": "prequeue",
		"/seckill/s1/challenge":      "challenge",
		"/seckill/s1/draw/challenge": "draw_challenge",
		"/seckill/s1/queue":          "queue",
		"/seckill/s1/buy":            "",
		"/seckill/s1/queued":         "",
		"/seckill/s1/room/x":         "",
		"":                           "",
	} {
		got, ok := rs.Match(path)
		if got != want || ok != (want != "") {
			t.Errorf("Match(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = rs.Match("/seckill/s1/queue/") }); n != 0 {
		t.Errorf("Match allocates %v times, want 0", n)
	}
}

// A route that an earlier one shadows, or one without a leading slash or an endpoint, stops
// the handler's initialisation.
func TestRoutesRefuseARouteThatCouldNeverMatch(t *testing.T) {
	for name, c := range map[string]struct {
		routes []handler.Route
		want   string
	}{
		"shadowed":    {[]handler.Route{{Suffix: "/challenge", Endpoint: "challenge"}, {Suffix: "/draw/challenge", Endpoint: "draw"}}, "shadowed"},
		"same suffix": {[]handler.Route{{Suffix: "/room", Endpoint: "a"}, {Suffix: "/room", Endpoint: "b"}}, "shadowed"},
		"no slash":    {[]handler.Route{{Suffix: "room", Endpoint: "room"}}, "starts with /"},
		"no endpoint": {[]handler.Route{{Suffix: "/room", Endpoint: ""}}, "starts with /"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p, _ := recover().(string); !strings.Contains(p, c.want) {
					t.Errorf("panic %q, want one containing %q", p, c.want)
				}
			}()
			handler.NewRoutes(c.routes...)
		})
	}
}
