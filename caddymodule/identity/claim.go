package identity

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/contract"
)

// What every module of the package does with a request once it knows (or cannot know) who
// sent it: the client's own claim removed, the verified user admitted, the refusals and their
// challenge. seckill_identity, seckill_jwt and seckill_session all use it.

// UserHeader is the header the demo configuration and the backend read the user from. A
// client's own is removed, so nothing behind the gateway can mistake it for the identity.
const UserHeader = "X-User-ID"

// StripClaimedIdentity removes from h every header a client could use to claim who it is:
// UserHeader and extra (seckill_session's user_header, when set) in any letter case and with
// '_' for '-'. The underscore form counts because CGI-style backends (PHP, Python's WSGI,
// nginx's underscores_in_headers) read X_User_ID and X-User-ID as the same HTTP_X_USER_ID.
// Both seckill_identity (and seckill_session) and the seckill_jwt provider call
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

// admit makes user the request's identity the way Caddy's authentication handler does, and
// drops the client's own claim (X-User-ID in every spelling, and extra).
func admit(r *http.Request, user, extra string) {
	admitWithLanes(r, user, "", false, extra)
}

// admitWithLanes is admit that also sets {http.auth.user.lanes} to lanes when setLanes (the
// handler reads a lane claim): set even when empty, so the placeholder always says what this
// session holds.
func admitWithLanes(r *http.Request, user, lanes string, setLanes bool, extra string) {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.auth.user.id", user)
		if setLanes {
			repl.Set(lanesPlaceholder, lanes)
		}
	}
	StripClaimedIdentity(r.Header, extra)
}

// The refusals of a session, by outcome.
var (
	refusedMissing = handler.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "sign in first"}
	refusedInvalid = handler.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "the session is not valid; sign in again"}
	refusedAmbiguous = handler.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "more than one session credential on the request"}
	refusedNoKeys = handler.Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "sessions cannot be checked right now; retry shortly", RetryAfter: time.Second}
)

// challenge is the WWW-Authenticate of a refusal (RFC 6750 3): invalid_token once a token was
// presented, nothing more when none was.
func challenge(o core.Outcome) string {
	if o == core.Missing {
		return `Bearer realm="seckill"`
	}
	return `Bearer realm="seckill", error="invalid_token"`
}
