package caddymodule

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// fakeIdentity, fakeThrottle and fakeGate stand for seckill_identity, seckill_throttle and
// seckill_gate: what linkRoutes looks at is only their interfaces. Each records what it was
// linked to.
type fakeIdentity struct{ next caddyhttp.Handler }

func (f *fakeIdentity) LinkNext(next caddyhttp.Handler) { f.next = next }
func (f *fakeIdentity) ServeHTTP(http.ResponseWriter, *http.Request, caddyhttp.Handler) error {
	return nil
}

type fakeThrottle struct {
	d      handler.Decision
	joined bool
	served int
}

func (f *fakeThrottle) LinkDecision(d handler.Decision, joined bool) { f.d, f.joined = d, joined }
func (f *fakeThrottle) ServeHTTP(http.ResponseWriter, *http.Request, caddyhttp.Handler) error {
	f.served++
	return nil
}

type fakeGate struct{ served int }

func (g *fakeGate) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	return g.ServeDecision(w, r, nil)
}
func (g *fakeGate) ServeDecision(http.ResponseWriter, *http.Request, handler.Joint) error {
	g.served++
	return nil
}

type other struct{}

func (other) ServeHTTP(http.ResponseWriter, *http.Request, caddyhttp.Handler) error { return nil }

// A purchase's identity, throttle and decision are linked only when they stand together, in
// that order, in one route: across routes the next handler depends on the request, and another
// handler between them must run. On a Cluster they are linked but the zones keep their own
// call (the keys are on other slots).
func TestOnlyAPurchasesHandlersStandingTogetherInOneRouteAreLinked(t *testing.T) {
	type floor struct {
		id                                                     *fakeIdentity
		sameRoute, inSubroute, beforeOther, lastInRoute, alone *fakeThrottle
		gates                                                  []*fakeGate
	}
	build := func() (caddyhttp.RouteList, floor) {
		f := floor{id: &fakeIdentity{}, sameRoute: &fakeThrottle{}, inSubroute: &fakeThrottle{}, beforeOther: &fakeThrottle{},
			lastInRoute: &fakeThrottle{}}
		for range 4 {
			f.gates = append(f.gates, &fakeGate{})
		}
		return caddyhttp.RouteList{
			{Handlers: []caddyhttp.MiddlewareHandler{f.id, f.sameRoute, f.gates[0]}},
			{Handlers: []caddyhttp.MiddlewareHandler{&caddyhttp.Subroute{Routes: caddyhttp.RouteList{
				{Handlers: []caddyhttp.MiddlewareHandler{f.inSubroute, f.gates[1]}},
			}}}},
			{Handlers: []caddyhttp.MiddlewareHandler{f.beforeOther, other{}, f.gates[2]}},
			{Handlers: []caddyhttp.MiddlewareHandler{f.lastInRoute}},
			{Handlers: []caddyhttp.MiddlewareHandler{f.gates[3]}},
		}, f
	}
	routes, f := build()
	if floors, joined := linkRoutes(routes, true); floors != 2 || joined != 2 {
		t.Fatalf("linked %d floors, %d joined, want 2 and 2", floors, joined)
	}
	if f.sameRoute.d != f.gates[0] || !f.sameRoute.joined || f.inSubroute.d != f.gates[1] || !f.inSubroute.joined {
		t.Fatalf("the throttles right before a gate: %+v %+v, want linked and joined", f.sameRoute, f.inSubroute)
	}
	if f.beforeOther.d != nil || f.lastInRoute.d != nil {
		t.Fatalf("a throttle before another handler or last in its route was linked: %+v %+v", f.beforeOther, f.lastInRoute)
	}
	// The identity's next is the throttle itself, called directly.
	if f.id.next == nil {
		t.Fatal("the identity before the throttle was not linked")
	}
	if err := f.id.next.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil)); err != nil || f.sameRoute.served != 1 {
		t.Fatalf("the identity's link served the throttle %d times (%v), want once", f.sameRoute.served, err)
	}
	routes, f = build()
	if floors, joined := linkRoutes(routes, false); floors != 2 || joined != 0 || f.sameRoute.joined || f.sameRoute.d != f.gates[0] {
		t.Fatalf("on a Cluster: %d floors, %d joined (%+v), want 2 linked, none joined", floors, joined, f.sameRoute)
	}
}
