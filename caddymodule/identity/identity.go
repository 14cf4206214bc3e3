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
// from the session only. docs/identity.md has the why of each
// choice (issue 26).
package identity

import (
	"net/http"
	"time"

	"github.com/seckilledge/seckill/caddymodule/identity/core"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/refusal"
	"github.com/seckilledge/seckill/contract"
)

func init() {
	caddy.RegisterModule(Identity{})
}

// UserHeader is the header the demo configuration and the backend read the user from. A
// client's own is removed, so nothing behind the gateway can mistake it for the identity.
const UserHeader = "X-User-ID"

// StripClaimedIdentity removes from h every header a client could use to claim who it is:
// UserHeader and extra (seckill_session's user_header, when set) in any letter case and with
// '_' for '-'. The underscore form counts because CGI-style backends (PHP, Python's WSGI,
// nginx's underscores_in_headers) read X_User_ID and X-User-ID as the same HTTP_X_USER_ID
// (issue 33). Both seckill_identity (and seckill_session) and the seckill_jwt provider call
// it, so no path into the site leaves the client's claim on the request.
func StripClaimedIdentity(h http.Header, extra string) {
	for k := range h {
		if sameHeaderName(k, UserHeader) || (extra != "" && sameHeaderName(k, extra)) {
			delete(h, k)
		}
	}
}

// sameHeaderName compares two header names ignoring ASCII case and taking '_' for '-',
// without allocating (it runs on every admitted request).
func sameHeaderName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if foldHeaderByte(a[i]) != foldHeaderByte(b[i]) {
			return false
		}
	}
	return true
}

func foldHeaderByte(c byte) byte {
	switch {
	case c == '_':
		return '-'
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return c
}

// Identity is the `seckill_identity` handler: a verified session sets {http.auth.user.id} and
// the request goes on; anything else is answered here.
//
// Why a handler and not only the provider inside Caddy's `authentication` handler: that
// handler answers a refusal with a bare 401 (a body only with handle_errors) and treats "no
// keys yet" like a bad password. This one answers the contract's JSON, tells 401 from 503, and
// honours handle_errors the way every seckill handler does.
type Identity struct {
	// cookie, jwks_url, keys, issuer, audience, user_claim, leeway, jwks_refresh,
	// jwks_min_interval, verified_cache.
	JWT

	// Hand refusals to the server's `handle_errors` routes as caddyhttp errors instead of
	// writing the JSON refusal body. WWW-Authenticate and Retry-After are set either way.
	HandleErrors bool `json:"handle_errors,omitempty"`

	refuse refusal.Writer
}

// CaddyModule returns the Caddy module information.
func (Identity) CaddyModule() caddy.ModuleInfo {
	return refusal.Module[Identity]("http.handlers.seckill_identity")
}

// Provision sets up the verifier (see JWT.Provision).
func (h *Identity) Provision(ctx caddy.Context) error {
	h.refuse = refusal.Writer{HandleErrors: h.HandleErrors}
	return h.JWT.Provision(ctx)
}

// The refusals of a session, by outcome.
var (
	refusedMissing = refusal.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "sign in first"}
	refusedInvalid = refusal.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "the session is not valid; sign in again"}
	refusedAmbiguous = refusal.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "more than one session credential on the request"}
	refusedNoKeys = refusal.Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "sessions cannot be checked right now; retry shortly", RetryAfter: time.Second}
)

// ServeHTTP verifies the session, then calls next as its user or refuses.
func (h *Identity) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	user, o := h.identify(r)
	switch o {
	case core.Verified:
		admit(r, user, "")
		return next.ServeHTTP(w, r)
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

// admit makes user the request's identity the way Caddy's authentication handler does, and
// drops the client's own claim (X-User-ID in every spelling, and extra).
func admit(r *http.Request, user, extra string) {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.auth.user.id", user)
	}
	StripClaimedIdentity(r.Header, extra)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Identity)(nil)
	_ caddy.Validator             = (*Identity)(nil)
	_ caddy.CleanerUpper          = (*Identity)(nil)
	_ caddyhttp.MiddlewareHandler = (*Identity)(nil)
)
