package handler

import (
	"net/http"
	"path"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// One route for the edge's paths. A site may match every path under its prefix with one route
// (`/seckill/*`) and stand in it, flat, the handlers of the purchase, its token and the room:
// an identity, a throttle, seckill_token, seckill_gate, seckill_draw, seckill_room. Caddy then
// runs one route's machinery (its matcher, the replacer, the metrics wrapper) per purchase or
// poll, instead of one per route it passes. The seckill app sees the shape when it starts
// (caddymodule, floor.go) and gives the route a Dispatch: which handler answers which path,
// decided by one look at the path. Each handler that answers paths (a Shared one) passes every
// other request to Caddy's next handler; the identity and the throttle act only on the paths
// some handler of the route answers, and hand a token or a purchase straight to its decision.
// A request no handler of the route answers goes through it untouched to the site's next
// routes (the backend's, the shop's).

// SharedPath is one path a Shared handler answers under {prefix}/{sale}/: the rest of the path
// ("buy", "room/prequeue") and the method it needs ("" for any).
type SharedPath struct {
	Rest, Method string
}

// Shared is a handler that answers some endpoints under the edge's prefix and can stand with
// others in one route (seckill_gate, seckill_token, seckill_room, seckill_draw).
type Shared interface {
	caddyhttp.MiddlewareHandler
	// Paths are the handler's prefix and the paths it answers under {prefix}/{sale}/.
	Paths() (prefix string, paths []SharedPath)
	// Share makes the handler answer only the requests d gives it (d.Owns(r, i)) and pass the
	// others to Caddy's next handler.
	Share(d *Dispatch, i int)
}

// Target is where a route's Dispatch sends a request.
type Target uint8

const (
	// Elsewhere: no handler of the route answers the request; each passes it on.
	Elsewhere Target = iota
	// ToDecision: seckill_token or seckill_gate answers it, in one script call that can carry the
	// throttle's zones.
	ToDecision
	// ToOther: another handler of the route (the room, the draw) answers it.
	ToOther
)

// Dispatch is which handler of a route answers which path. It allocates nothing for a path in
// canonical form.
type Dispatch struct {
	prefix string
	owners map[string][]owner // by the path's rest after {prefix}/{sale}/
}

type owner struct {
	i        int
	method   string
	decision Decision // nil for a handler that is no decision
}

// NewDispatch returns the dispatch of handlers, Shared ones standing in one route (their index
// is their place in the slice), all under prefix.
func NewDispatch(prefix string, handlers []Shared) *Dispatch {
	d := &Dispatch{prefix: prefix, owners: map[string][]owner{}}
	for i, h := range handlers {
		_, eps := h.Paths()
		dec, _ := h.(Decision)
		for _, e := range eps {
			d.owners[e.Rest] = append(d.owners[e.Rest], owner{i: i, method: e.Method, decision: dec})
		}
	}
	return d
}

// rest is the part of r's path after {prefix}/{sale}/. A path not in canonical form is read
// cleaned, as Caddy's matchers read it: the handler it reaches refuses it (400 bad_request).
func (d *Dispatch) rest(r *http.Request) (string, bool) {
	p := r.URL.Path
	if strings.Contains(p, "//") || strings.Contains(p, "/.") {
		p = path.Clean(p)
	}
	if len(p) <= len(d.prefix)+1 || p[len(d.prefix)] != '/' || p[:len(d.prefix)] != d.prefix {
		return "", false
	}
	s := p[len(d.prefix)+1:]
	i := strings.IndexByte(s, '/')
	if i <= 0 {
		return "", false
	}
	return s[i+1:], true
}

func (d *Dispatch) of(r *http.Request) []owner {
	rest, ok := d.rest(r)
	if !ok {
		return nil
	}
	return d.owners[rest]
}

// Owns reports whether the route's handler i answers r.
func (d *Dispatch) Owns(r *http.Request, i int) bool {
	for _, o := range d.of(r) {
		if o.i == i && (o.method == "" || o.method == r.Method) {
			return true
		}
	}
	return false
}

// Target is where r goes in the route.
func (d *Dispatch) Target(r *http.Request) Target {
	t := Elsewhere
	for _, o := range d.of(r) {
		if o.method != "" && o.method != r.Method {
			continue
		}
		if o.decision != nil {
			return ToDecision
		}
		t = ToOther
	}
	return t
}

// decision is the Decision that answers r, or nil.
func (d *Dispatch) decision(r *http.Request) Decision {
	for _, o := range d.of(r) {
		if o.decision != nil && (o.method == "" || o.method == r.Method) {
			return o.decision
		}
	}
	return nil
}

// ServeDecision hands r, with zones, to the route's decision that answers it. A request no
// decision answers never gets here (the throttle and the identity ask Target first); if one
// did, the zones settle alone and it is refused as the route's end would.
func (d *Dispatch) ServeDecision(w http.ResponseWriter, r *http.Request, zones Joint) error {
	if dec := d.decision(r); dec != nil {
		return dec.ServeDecision(w, r, zones)
	}
	if zones != nil && zones.Alone(r.Context()) {
		return zones.Refuse()
	}
	return unlinked.ServeHTTP(w, r)
}

// ServeHTTP is ServeDecision without zones.
func (d *Dispatch) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	return d.ServeDecision(w, r, nil)
}

// Share is a Shared handler's place in its route's Dispatch, set when the app starts (none:
// the handler answers every request that reaches it, as it always has). A handler holds a
// *Share made in its Provision; a nil one is never shared.
type Share struct {
	p atomic.Pointer[shareOf]
}

type shareOf struct {
	d *Dispatch
	i int
}

// Set places the handler at index i of d.
func (s *Share) Set(d *Dispatch, i int) {
	if s != nil {
		s.p.Store(&shareOf{d: d, i: i})
	}
}

// Passes reports whether the handler stands in a dispatched route and r is not its own: it
// then calls Caddy's next handler.
func (s *Share) Passes(r *http.Request) bool {
	if s == nil {
		return false
	}
	x := s.p.Load()
	return x != nil && !x.d.Owns(r, x.i)
}

var _ Decision = (*Dispatch)(nil)
