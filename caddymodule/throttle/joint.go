package throttle

import (
	"context"
	"net/http"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/throttle/core"
)

// joint is the throttle's check of one request left to the next handler of the route
// (handler.Joint): seckill_gate runs the zones' exact tier in its own script call, and hands
// the zones' reply back here, where it is merged, counted and answered exactly as when the
// throttle calls Redis itself.
//
// The seckill app links a throttle to the next handler at start (caddymodule.App, floor.go
// there) when that handler is a Decision in the same route, right after it; the zones join its
// script call when the Redis is a single server (on a Cluster the zones' keys and the sale's
// are on other slots).
type joint struct {
	h        *Handler
	w        http.ResponseWriter
	j        core.Joint
	d        core.Decision
	answered bool
}

func (x *joint) AppendKeys(dst []string) []string { return x.j.AppendKeys(dst) }
func (x *joint) AppendArgs(dst []any) []any       { return x.j.AppendArgs(dst) }

func (x *joint) Answer(reply []any, err error) bool {
	if !x.answered {
		x.settle(x.j.Answer(reply, err))
	}
	return x.d.Status != 0
}

func (x *joint) Alone(ctx context.Context) bool {
	if !x.answered {
		x.settle(x.j.Alone(ctx))
	}
	return x.d.Status != 0
}

func (x *joint) Skip() bool {
	if !x.answered {
		x.settle(x.j.Skip())
	}
	return x.d.Status != 0
}

func (x *joint) settle(d core.Decision) {
	x.d, x.answered = d, true
	x.h.record(&x.d)
	x.h.writeHeaders(x.w, &x.d)
}

func (x *joint) Refuse() error { return x.h.refuseWith(x.w, &x.d) }

// decisionLink is the Decision after the handler in its route, and whether the zones' exact
// tier runs in its script call (joined: on a single Redis) or in the throttle's own.
type decisionLink struct {
	d      handler.Decision
	joined bool
	// floor is the route's dispatch when the handler stands in a dispatched route
	// (handler.Dispatch, LinkFloor); with direct, d is that dispatch.
	floor  *handler.Dispatch
	direct bool
}

// LinkDecision links the handler to d, the next handler of its route (caddymodule.App links
// them at start): a request the zones admit goes straight to d, and with joined the zones'
// exact tier runs in d's script call.
func (h *Handler) LinkDecision(d handler.Decision, joined bool) {
	if h.link != nil {
		h.link.Store(&decisionLink{d: d, joined: joined})
	}
}

// LinkFloor places the handler in a dispatched route, d its dispatch (handler.Dispatch): the
// zones count only the requests some handler of the route answers. With direct (the throttle
// right before the route's first Shared handler), a token or a purchase goes straight to its
// decision, its zones in the decision's script call with joined; any other request, and every
// request without direct, goes through Caddy's chain after the zones.
func (h *Handler) LinkFloor(d *handler.Dispatch, direct, joined bool) {
	if h.link != nil {
		l := &decisionLink{floor: d, direct: direct}
		if direct {
			l.d, l.joined = d, joined
		}
		h.link.Store(l)
	}
}

var _ handler.Joint = (*joint)(nil)
