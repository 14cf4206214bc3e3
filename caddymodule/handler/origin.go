package handler

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler/core"
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
// to: core.SameOrigin, the rule written out.
func SameOrigin(r *http.Request) bool { return core.SameOrigin(r) }
