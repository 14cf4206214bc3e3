package caddymodule

import (
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// fakeThrottle and fakeGate stand for seckill_throttle and seckill_gate: what linkRoutes
// looks at is only their interfaces.
type fakeThrottle struct{ joined bool }

func (f *fakeThrottle) JoinNext(j bool) { f.joined = j }
func (f *fakeThrottle) ServeHTTP(http.ResponseWriter, *http.Request, caddyhttp.Handler) error {
	return nil
}

type fakeGate struct{}

func (fakeGate) TakesJoint() bool                                                      { return true }
func (fakeGate) ServeHTTP(http.ResponseWriter, *http.Request, caddyhttp.Handler) error { return nil }

type other struct{}

func (other) ServeHTTP(http.ResponseWriter, *http.Request, caddyhttp.Handler) error { return nil }

// A throttle is linked only to the handler right after it in its own route, when that one
// takes joints, and only on a single Redis: across routes its next handler depends on the
// request, and on a Cluster the keys are on other slots.
func TestOnlyAThrottleRightBeforeAGateInItsRouteOnASingleRedisIsLinked(t *testing.T) {
	sameRoute, inSubroute, beforeOther, lastInRoute := &fakeThrottle{}, &fakeThrottle{}, &fakeThrottle{}, &fakeThrottle{joined: true}
	routes := caddyhttp.RouteList{
		{Handlers: []caddyhttp.MiddlewareHandler{sameRoute, fakeGate{}}},
		{Handlers: []caddyhttp.MiddlewareHandler{&caddyhttp.Subroute{Routes: caddyhttp.RouteList{
			{Handlers: []caddyhttp.MiddlewareHandler{inSubroute, fakeGate{}}},
		}}}},
		{Handlers: []caddyhttp.MiddlewareHandler{beforeOther, other{}, fakeGate{}}},
		{Handlers: []caddyhttp.MiddlewareHandler{lastInRoute}},
		{Handlers: []caddyhttp.MiddlewareHandler{fakeGate{}}},
	}
	if n := linkRoutes(routes, true); n != 2 {
		t.Fatalf("linked %d, want 2", n)
	}
	if !sameRoute.joined || !inSubroute.joined || beforeOther.joined || lastInRoute.joined {
		t.Fatalf("joined: same route %v, subroute %v, before another handler %v, last in its route %v; want true true false false",
			sameRoute.joined, inSubroute.joined, beforeOther.joined, lastInRoute.joined)
	}
	if n := linkRoutes(routes, false); n != 0 || sameRoute.joined || inSubroute.joined {
		t.Fatalf("on a Cluster: linked %d (same route %v, subroute %v), want none", n, sameRoute.joined, inSubroute.joined)
	}
}
