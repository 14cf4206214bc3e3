package handler

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/edge"
)

// A purchase's handlers standing together in one route (an identity, a throttle, then
// seckill_gate or seckill_token) run as one: the seckill app links them when it starts
// (caddymodule, floor.go, the one place that knows the shape), each then calls the next one
// directly instead of through Caddy's chain, and the throttle's zones travel to the decision
// as an argument (Joint), to run in its one script call. Unlinked, every handler is an ordinary
// Caddy middleware, and the throttle calls Redis itself.

// Joint is a check that a handler (seckill_throttle) leaves to the Decision after it in its
// route, to run inside that decision's own script call: one Redis round trip for both
// (docs/throttle.md, "One round trip"). The decision must settle it on every request, by
// Answer when its script carried the check's keys and arguments, by Skip when it answered from
// its own memory without a script, else by Alone, and answer Refuse when any of them reports
// a refusal: the check then refused the request before the decision was made.
type Joint interface {
	// AppendKeys, AppendArgs and Answer: what the check adds to the next handler's script
	// call (lua.Throttled), and its part of the reply.
	edge.Joint
	// Alone makes the check in a round trip of its own, unless Answer already settled it, and
	// reports whether it refused the request.
	Alone(ctx context.Context) (refused bool)
	// Skip settles the check without a round trip, unless Answer already settled it, when
	// the next handler answered from its own memory (a sale it knows is sold out): only the
	// check's local tiers decide. It reports whether they refused the request.
	Skip() (refused bool)
	// Refuse writes the check's refusal.
	Refuse() error
}

// Decision is a handler that answers every request itself (it never calls Caddy's next
// handler) with one script call that can carry the zones of the throttle right before it
// (seckill_gate, seckill_token). ServeHTTP is ServeDecision without zones.
type Decision interface {
	caddyhttp.MiddlewareHandler
	// ServeDecision answers r, with zones (nil for none) in its script call.
	ServeDecision(w http.ResponseWriter, r *http.Request, zones Joint) error
}

// Next is where a handler of a purchase's route hands a request on: Caddy's next handler,
// unless the seckill app linked it to the handler after it in its route (Link), which it then
// calls directly. Set at start, read on every request (the servers may already serve).
type Next struct {
	p     atomic.Pointer[caddyhttp.Handler]
	floor atomic.Pointer[Dispatch]
}

// LinkFloor makes d the dispatch of the handler's route (dispatch.go): the handler then acts
// only on the requests some handler of the route answers, and hands only a decision's
// (ToDecision) to the linked handler.
func (n *Next) LinkFloor(d *Dispatch) { n.floor.Store(d) }

// Target is where r goes in the handler's route: ToDecision when the route has no dispatch
// (every request the handler sees is its route's).
func (n *Next) Target(r *http.Request) Target {
	if n != nil {
		if d := n.floor.Load(); d != nil {
			return d.Target(r)
		}
	}
	return ToDecision
}

// For is where r, admitted by the handler, goes: the linked handler for a decision's request,
// else next.
func (n *Next) For(t Target, next caddyhttp.Handler) caddyhttp.Handler {
	if t != ToDecision {
		return next
	}
	return n.Or(next)
}

// Link makes h (the route's next handler, ending in a Decision) where requests go.
func (n *Next) Link(h caddyhttp.Handler) { n.p.Store(&h) }

// Or is the linked handler, or next when none is linked.
func (n *Next) Or(next caddyhttp.Handler) caddyhttp.Handler {
	if n != nil {
		if p := n.p.Load(); p != nil {
			return *p
		}
	}
	return next
}

// Linked reports whether the app linked the handler to the next one.
func (n *Next) Linked() bool { return n != nil && n.p.Load() != nil }

// Direct is the caddyhttp.Handler that runs h, a linked handler of a purchase's route, with no
// Caddy next: h is a Decision, or a handler linked to the rest of the route, so it never calls
// it (if it did, the request would fail with errUnlinked rather than go anywhere).
func Direct(h caddyhttp.MiddlewareHandler) caddyhttp.Handler {
	return caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return h.ServeHTTP(w, r, unlinked) })
}

var unlinked = caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
	return caddyhttp.Error(http.StatusInternalServerError, errUnlinked)
})

var errUnlinked = errors.New("seckill: a linked handler called past the end of its route")
