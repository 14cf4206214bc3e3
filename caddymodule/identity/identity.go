// Package identity tells the gateway who a buyer is without asking the shop on every request.
//
// Two handlers, one per kind of shop:
//
//   - `seckill_identity` (http.handlers.seckill_identity) verifies a signed session, a JWT in a
//     cookie or an Authorization: Bearer header, locally: a signature check with the shop's
//     published keys (JWKS, fetched in the background and kept across reloads) or keys from the
//     environment. Its verifier is also the authentication provider
//     `http.authentication.providers.seckill_jwt`, for Caddy's `authentication` handler.
//   - `seckill_session` (http.handlers.seckill_session) is for shops whose sessions are opaque:
//     it asks the shop's session endpoint, like forward_auth, but keeps the connection alive
//     and remembers each answer for a while, so a sale's flood costs the shop one call per
//     session per TTL.
//
// Both set {http.auth.user.id} (as Caddy's authentication handler does), refuse with the
// contract's JSON (401 unauthenticated, with WWW-Authenticate; 503 unavailable when the keys
// or the session service are missing), and remove the client's own X-User-ID (in every
// spelling, X_User_ID included: StripClaimedIdentity) from the request: the identity comes
// from the session only. With lane_claim, seckill_identity (and seckill_jwt) also set
// {http.auth.user.lanes} from the verified token's claim, the claims a waiting room's lanes
// read; seckill_session's opaque sessions carry no claims. docs/identity.md has the why of
// each choice.
package identity

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/identity/core"
)

func init() {
	caddy.RegisterModule(Identity{})
}

// Identity is the `seckill_identity` handler: a verified session sets {http.auth.user.id} and
// the request goes on; anything else is answered here.
//
// Why a handler and not only the provider inside Caddy's `authentication` handler: that
// handler answers a refusal with a bare 401 (a body only with handle_errors) and treats "no
// keys yet" like a bad password. This one answers the contract's JSON, tells 401 from 503, and
// honours handle_errors the way every seckill handler does.
type Identity struct {
	// cookie, jwks_url, keys, issuer, audience, user_claim, lane_claim, leeway, jwks_refresh,
	// jwks_min_interval, verified_cache.
	JWT

	// Hand refusals to the server's `handle_errors` routes as caddyhttp errors instead of
	// writing the JSON refusal body. WWW-Authenticate and Retry-After are set either way.
	HandleErrors bool `json:"handle_errors,omitempty"`

	refuse handler.Writer
	// next is the handler after this one in its route when the seckill app linked them
	// (handler.Next): a purchase's identity, throttle and decision run as one.
	next *handler.Next
}

// CaddyModule returns the Caddy module information.
func (Identity) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Identity]("http.handlers.seckill_identity")
}

// Provision sets up the verifier (see JWT.Provision).
func (h *Identity) Provision(ctx caddy.Context) error {
	h.next = new(handler.Next)
	h.refuse = handler.Writer{HandleErrors: h.HandleErrors}
	return h.JWT.Provision(ctx)
}

// ServeHTTP verifies the session, then calls next as its user or refuses.
func (h *Identity) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	t := h.next.Target(r)
	if t == handler.Elsewhere {
		// In a dispatched route, a path none of its handlers answers (handler.Dispatch).
		return next.ServeHTTP(w, r)
	}
	id, o := h.identify(r)
	switch o {
	case core.Verified:
		admitWithLanes(r, id.User, id.Lanes, h.LaneClaim != "", "")
		return h.next.For(t, next).ServeHTTP(w, r)
	case core.NoKeys:
		return h.refuse.Write(w, refusedNoKeys)
	case core.Missing:
		w.Header().Set("WWW-Authenticate", challenge(o))
		return h.refuse.Write(w, refusedMissing)
	case core.Ambiguous:
		w.Header().Set("WWW-Authenticate", challenge(o))
		return h.refuse.Write(w, refusedAmbiguous)
	}
	w.Header().Set("WWW-Authenticate", challenge(o))
	return h.refuse.Write(w, refusedInvalid)
}

// LinkNext makes next, the rest of the handler's route, where a request it admits goes
// (caddymodule.App links a purchase's handlers at start).
func (h *Identity) LinkNext(next caddyhttp.Handler) {
	if h.next != nil {
		h.next.Link(next)
	}
}

// LinkFloor makes d the dispatch of the handler's route (handler.Dispatch): it then checks
// only the requests some handler of the route answers.
func (h *Identity) LinkFloor(d *handler.Dispatch) {
	if h.next != nil {
		h.next.LinkFloor(d)
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Identity)(nil)
	_ caddy.Validator             = (*Identity)(nil)
	_ caddy.CleanerUpper          = (*Identity)(nil)
	_ caddyhttp.MiddlewareHandler = (*Identity)(nil)
)
