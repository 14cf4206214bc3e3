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

// fakeShared stands for seckill_token, seckill_gate, seckill_draw or seckill_room: it answers
// its paths and, placed in a dispatch, passes every other request to Caddy's next handler.
type fakeShared struct {
	name   string
	paths  []handler.SharedPath
	share  handler.Share
	served *[]string
}

func (f *fakeShared) Paths() (string, []handler.SharedPath) { return "/seckill", f.paths }
func (f *fakeShared) Share(d *handler.Dispatch, i int)      { f.share.Set(d, i) }
func (f *fakeShared) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if f.share.Passes(r) {
		return next.ServeHTTP(w, r)
	}
	*f.served = append(*f.served, f.name)
	return nil
}

// fakeSharedDecision is a Shared decision (seckill_token, seckill_gate).
type fakeSharedDecision struct{ fakeShared }

func (f *fakeSharedDecision) ServeDecision(http.ResponseWriter, *http.Request, handler.Joint) error {
	*f.served = append(*f.served, f.name+" (direct)")
	return nil
}

// fakeFloorThrottle and fakeFloorIdentity record how a dispatched route's stages were linked.
type fakeFloorThrottle struct {
	d              *handler.Dispatch
	direct, joined bool
}

func (f *fakeFloorThrottle) LinkFloor(d *handler.Dispatch, direct, joined bool) {
	f.d, f.direct, f.joined = d, direct, joined
}
func (f *fakeFloorThrottle) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return next.ServeHTTP(w, r)
}

type fakeFloorIdentity struct {
	fakeIdentity
	d *handler.Dispatch
}

func (f *fakeFloorIdentity) LinkFloor(d *handler.Dispatch) { f.d = d }
func (f *fakeFloorIdentity) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return next.ServeHTTP(w, r)
}

// chain runs hs as Caddy runs a route's handlers: each with the rest as its next, the route's
// end last.
func chain(hs []caddyhttp.MiddlewareHandler, end caddyhttp.Handler) caddyhttp.Handler {
	h := end
	for i := len(hs) - 1; i >= 0; i-- {
		mh, next := hs[i], h
		h = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return mh.ServeHTTP(w, r, next) })
	}
	return h
}

// One route for the edge's paths: the token issuer, the gate, the draw and the room standing in
// one route each answer their own paths and pass the rest, down to the route's end (the site's
// next routes); the throttle right before them and the identity before it are linked to the
// route's dispatch, the throttle straight to it. A route of another shape (a gate alone, a
// throttle and a gate, the draw and the room without a decision) is not dispatched: its
// handlers answer every request that reaches them, as a hand-written route has them.
func TestTheHandlersOfOneRouteUnderThePrefixAnswerTheirOwnPathsAndPassTheRest(t *testing.T) {
	var served []string
	shared := func(name string, paths ...handler.SharedPath) *fakeShared {
		return &fakeShared{name: name, paths: paths, served: &served}
	}
	token := &fakeSharedDecision{*shared("token", handler.SharedPath{Rest: "token"})}
	gate := &fakeSharedDecision{*shared("gate", handler.SharedPath{Rest: "buy", Method: http.MethodPost})}
	draw := shared("draw", handler.SharedPath{Rest: "draw"}, handler.SharedPath{Rest: "draw/challenge"})
	room := shared("room", handler.SharedPath{Rest: "room"}, handler.SharedPath{Rest: "queue"}, handler.SharedPath{Rest: "challenge"})
	id, zones := &fakeFloorIdentity{}, &fakeFloorThrottle{}
	hs := []caddyhttp.MiddlewareHandler{id, zones, token, gate, draw, room}
	if floors, joined := linkRoutes(caddyhttp.RouteList{{Handlers: hs}}, true); floors != 1 || joined != 1 {
		t.Fatalf("linked %d floors, %d joined, want 1 and 1", floors, joined)
	}
	if zones.d == nil || !zones.direct || !zones.joined || id.d != zones.d || id.next == nil {
		t.Fatalf("the stages: throttle %+v, identity dispatch %v next %v; want both on the route's dispatch, the throttle direct and joined, the identity linked", zones, id.d, id.next)
	}
	d := zones.d
	ended := 0
	end := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { ended++; return nil })
	route := chain(hs, end)
	for _, c := range []struct {
		method, path string
		want         string // the handler that answers, "" for the route's end
		target       handler.Target
	}{
		{"POST", "/seckill/s1/buy", "gate", handler.ToDecision},
		{"GET", "/seckill/s1/buy", "", handler.Elsewhere},
		{"POST", "/seckill/s1/token", "token", handler.ToDecision},
		{"GET", "/seckill/s1/token", "token", handler.ToDecision},
		{"GET", "/seckill/s1/queue", "room", handler.ToOther},
		{"GET", "/seckill/s1/challenge", "room", handler.ToOther},
		{"POST", "/seckill/s1/draw", "draw", handler.ToOther},
		{"GET", "/seckill/s1/draw/result", "", handler.Elsewhere},
		{"GET", "/seckill/s1/report", "", handler.Elsewhere},
		{"POST", "/seckill/s1/x/buy", "", handler.Elsewhere},
		{"POST", "/seckill//buy", "", handler.Elsewhere},
		{"POST", "/seckill/buy", "", handler.Elsewhere},
		{"POST", "/seckillx/s1/buy", "", handler.Elsewhere},
		{"GET", "/orders/o1", "", handler.Elsewhere},
		// Not in canonical form: read as Caddy's matchers read it, answered (refused) by its handler.
		{"POST", "/seckill/a/../s1/buy", "gate", handler.ToDecision},
	} {
		served, ended = nil, 0
		r := httptest.NewRequest(c.method, c.path, nil)
		if got := d.Target(r); got != c.target {
			t.Errorf("%s %s: target %d, want %d", c.method, c.path, got, c.target)
		}
		if err := route.ServeHTTP(httptest.NewRecorder(), r); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && (ended != 1 || len(served) != 0):
			t.Errorf("%s %s: served by %v, the route's end reached %d times; want it passed to the end", c.method, c.path, served, ended)
		case c.want != "" && (ended != 0 || len(served) != 1 || served[0] != c.want):
			t.Errorf("%s %s: served by %v, the route's end reached %d times; want %s alone", c.method, c.path, served, ended, c.want)
		}
	}
	// The throttle's straight path: the dispatch hands a purchase to the gate's ServeDecision.
	served = nil
	if err := d.ServeDecision(httptest.NewRecorder(), httptest.NewRequest("POST", "/seckill/s1/buy", nil), nil); err != nil || len(served) != 1 || served[0] != "gate (direct)" {
		t.Fatalf("the dispatch's decision for a purchase: %v (%v), want the gate's ServeDecision", served, err)
	}

	// Hand-written routes keep their behaviour: nothing is shared, each handler answers all.
	served = nil
	alone := &fakeSharedDecision{*shared("gate", handler.SharedPath{Rest: "buy", Method: http.MethodPost})}
	pair := &fakeSharedDecision{*shared("gate", handler.SharedPath{Rest: "buy", Method: http.MethodPost})}
	pairZones := &fakeThrottle{}
	d2, r2 := shared("draw", handler.SharedPath{Rest: "draw"}), shared("room", handler.SharedPath{Rest: "queue"})
	routes := caddyhttp.RouteList{
		{Handlers: []caddyhttp.MiddlewareHandler{alone}},
		{Handlers: []caddyhttp.MiddlewareHandler{pairZones, pair}},
		{Handlers: []caddyhttp.MiddlewareHandler{d2, r2}},
	}
	if floors, _ := linkRoutes(routes, true); floors != 1 || pairZones.d != handler.Decision(pair) {
		t.Fatalf("hand-written routes: %d floors, the throttle linked to %v; want the throttle and gate linked as before", floors, pairZones.d)
	}
	for _, h := range []caddyhttp.MiddlewareHandler{alone, pair, d2, r2} {
		ended = 0
		if err := chain([]caddyhttp.MiddlewareHandler{h}, end).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/anything/else", nil)); err != nil || ended != 0 {
			t.Fatalf("a hand-written route's handler passed a request on (%v): it must answer every request that reaches it", err)
		}
	}
}
