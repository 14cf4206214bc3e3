package handler

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/contract"
)

// CrossSite answers a state-changing request a browser sent from another site.
var CrossSite = Refusal{Status: http.StatusForbidden, Code: contract.CodeCrossSite,
	Message: "a request from another site: buy, enter and leave from the shop's own pages"}

// CheckRequest is CheckPath, and for a state-changing method (POST, PUT, PATCH, DELETE) the
// same-origin rule of SameOrigin: every handler that changes state at the edge (room, draw,
// token, gate) calls it first, so the rule is written once.
func CheckRequest(r *http.Request) (Refusal, bool) {
	if ref, ok := CheckPath(r); !ok {
		return ref, false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return Refusal{}, true
	}
	if !SameOrigin(r) && !AllowedOrigin(r) {
		return CrossSite, false
	}
	return Refusal{}, true
}

// allowedOriginVar is the request variable in which seckill_cors records the Origin it found
// on its allow list. A variable lives in the request's context, which no client can set.
const allowedOriginVar = "seckill.allowed_origin"

// AllowOrigin records that r's Origin is on the site's allow list (seckill_cors calls it):
// CheckRequest then lets a state-changing request from that origin through.
func AllowOrigin(r *http.Request, origin string) {
	caddyhttp.SetVar(r.Context(), allowedOriginVar, origin)
}

// AllowedOrigin reports whether seckill_cors found r's Origin on its allow list.
func AllowedOrigin(r *http.Request) bool {
	o, ok := caddyhttp.GetVar(r.Context(), allowedOriginVar).(string)
	if !ok || o == "" {
		return false
	}
	v := r.Header["Origin"]
	return len(v) == 1 && v[0] == o
}

// SameOrigin reports whether a browser could have sent r from a page of the site it is sent
// to. A simple cross-site POST (a form, Content-Type text/plain) carries the session
// cookie whenever the shop's cookie is SameSite=None, and always from a sibling subdomain
// (same-site), so it could enter a victim in a draw or move him to another size. The browser
// sets Sec-Fetch-Site and Origin, and no page can forge them:
//
//   - Sec-Fetch-Site: cross-site is refused;
//   - an Origin (sent on every cross-origin request and every POST) must be this request's
//     scheme and host; "null" (a sandboxed frame, a data: URL) is not;
//   - a request with neither (curl, a mobile app, an old browser on a same-origin page) passes:
//     it is no browser acting for another site.
//
// The host compared is the Host header: behind a proxy that rewrites it, keep the original
// (Caddy's reverse_proxy does by default). The scheme is not compared: a TLS-terminating proxy
// in front of Caddy would make every https page look cross-origin.
func SameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o, ok := r.Header["Origin"]
	if !ok {
		return true
	}
	if len(o) != 1 {
		return false
	}
	u, err := url.Parse(o[0])
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.User == nil && strings.EqualFold(u.Host, r.Host)
}
