// Package cors is the `seckill_cors` handler: the edge's answer to pages of the shop that live
// on another origin than the gateway (shop.example calling edge.shop.example). It answers the
// browser's preflight, lets the page read the answers with the buyer's credentials, and tells
// the edge's cross-site rule (handler.CheckRequest) that the origin is the shop's own; every
// other origin keeps that rule.
package cors

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/cors/core"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	caddy.RegisterModule(CORS{})
}

// CORS is the `seckill_cors` handler. Put it in front of the edge's routes (every route under
// the prefix and the order status route). For a request whose Origin is on the list it sets
// Access-Control-Allow-Origin to that origin, Access-Control-Allow-Credentials: true and the
// headers a page may read (Retry-After, Date), answers a preflight (OPTIONS with
// Access-Control-Request-Method) itself with 204, and lets a state-changing request from that
// origin pass the edge's cross-site rule. A preflight from any other origin is refused with 403
// cross_site; its other requests go on with no CORS header, so the browser shows the page
// nothing and the handlers refuse its state changes as before. Every answer varies on Origin.
type CORS struct {
	// The origins of the shop's pages, scheme://host[:port] (https://shop.example,
	// http://127.0.0.1:3000). Placeholders such as {env.SECKILL_ALLOWED_ORIGINS} are resolved
	// at load and split at spaces and commas. No "*", no wildcard, no "null": with credentials
	// those would hand the buyer's session to other sites, so the config does not load.
	Origins []string `json:"origins,omitempty"`

	// Request headers a page may send besides DefaultHeaders (the ones the JavaScript client
	// sends), such as X-User-ID where a demo gateway believes it.
	Headers []string `json:"headers,omitempty"`

	// How long a browser may keep a preflight's answer. Default 10m.
	MaxAge caddy.Duration `json:"max_age,omitempty"`

	list    core.AllowList
	err     error
	headers string
	maxAge  string
}

// DefaultHeaders are the request headers the JavaScript client sends (besides the safelisted
// ones): the JSON body's type, the session's bearer, the DPoP proof, the purchase token, the
// room's challenge, solution, ticket and invitation code, and the device id the throttle keys on.
var DefaultHeaders = []string{"Authorization", "Content-Type", "DPoP", "X-Device-ID", "X-Seckill-Challenge",
	"X-Seckill-Invitation", "X-Seckill-Solution", "X-Seckill-Ticket", "X-Seckill-Token"}

// Methods are the edge's methods a page on another origin may use.
const Methods = "GET, POST, DELETE"

// ExposedHeaders are the answer's headers a page may read: Retry-After paces the client, Date
// sets its clock for DPoP proofs.
const ExposedHeaders = "Retry-After, Date"

// DefaultMaxAge is how long a preflight's answer is kept by default.
const DefaultMaxAge = 10 * time.Minute

// CaddyModule returns the Caddy module information.
func (CORS) CaddyModule() caddy.ModuleInfo {
	return handler.Module[CORS]("http.handlers.seckill_cors")
}

// Provision resolves the origins' placeholders and builds the allow list; a bad origin is
// Validate's error.
func (h *CORS) Provision(caddy.Context) error {
	repl := caddy.NewReplacer()
	var origins []string
	for _, o := range h.Origins {
		origins = append(origins, strings.FieldsFunc(repl.ReplaceAll(o, ""), func(r rune) bool {
			return r == ' ' || r == ',' || r == '\t' || r == '\n'
		})...)
	}
	h.list, h.err = core.NewAllowList(origins)
	headers := append(append([]string(nil), DefaultHeaders...), h.Headers...)
	h.headers = strings.Join(headers, ", ")
	if h.MaxAge <= 0 {
		h.MaxAge = caddy.Duration(DefaultMaxAge)
	}
	h.maxAge = strconv.FormatInt(handler.Seconds(time.Duration(h.MaxAge)), 10)
	return nil
}

// Validate refuses a bad origin (core.ErrWildcard for "*") and a bad header name.
func (h *CORS) Validate() error {
	if h.err != nil {
		return fmt.Errorf("seckill_cors: %w", h.err)
	}
	for _, name := range h.Headers {
		if name == "" || strings.ContainsAny(name, " ,:*\t") {
			return fmt.Errorf("seckill_cors: header %q: one header name per entry, no wildcard", name)
		}
	}
	return nil
}

// ServeHTTP answers preflights and marks the requests of listed origins.
func (h *CORS) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	hdr := w.Header()
	hdr.Add("Vary", "Origin")
	v, has := r.Header["Origin"]
	if !has {
		return next.ServeHTTP(w, r)
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if len(v) != 1 || !h.list.Allowed(v[0]) {
		if preflight {
			return handler.Writer{}.Write(w, handler.CrossSite)
		}
		return next.ServeHTTP(w, r)
	}
	hdr.Set("Access-Control-Allow-Origin", v[0])
	hdr.Set("Access-Control-Allow-Credentials", "true")
	if preflight {
		hdr.Set("Access-Control-Allow-Methods", Methods)
		hdr.Set("Access-Control-Allow-Headers", h.headers)
		hdr.Set("Access-Control-Max-Age", h.maxAge)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	hdr.Set("Access-Control-Expose-Headers", ExposedHeaders)
	handler.AllowOrigin(r, v[0])
	return next.ServeHTTP(w, r)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*CORS)(nil)
	_ caddy.Validator             = (*CORS)(nil)
	_ caddyhttp.MiddlewareHandler = (*CORS)(nil)
)
