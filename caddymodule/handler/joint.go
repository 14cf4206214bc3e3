package handler

import (
	"context"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/edge"
)

// Joint is a check that a handler (seckill_throttle) leaves to the next handler of its route
// (seckill_gate), to run inside that handler's own script call: one Redis round trip for both
// (docs/throttle.md, "One round trip"). The next handler must settle it on every request, by
// Answer when its script carried the check's keys and arguments, by Skip when it answered from
// its own memory without a script, else by Alone, and answer Refuse when any of them reports
// a refusal: the check then refused the request before the next handler decided it.
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

// jointVar is the request variable that carries a Joint from one handler to the next.
const jointVar = "seckill.joint"

// LeaveJoint hands j to the next handler of the request. It reports false when the request
// carries no variable table (outside Caddy's server): the caller then checks alone.
func LeaveJoint(r *http.Request, j Joint) bool {
	vars, ok := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	if !ok {
		return false
	}
	vars[jointVar] = j
	return true
}

// TakeJoint returns the Joint left for this handler, or nil, and removes it from the request.
func TakeJoint(r *http.Request) Joint {
	vars, ok := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	if !ok {
		return nil
	}
	j, _ := vars[jointVar].(Joint)
	if j != nil {
		delete(vars, jointVar)
	}
	return j
}
