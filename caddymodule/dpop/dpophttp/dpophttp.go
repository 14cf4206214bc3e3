// Package dpophttp is the gateway side of device binding (caddymodule/dpop): the options the
// handlers share (device_binding, proof_max_age) and the check of a request's DPoP header
// against the request as the client sent it.
package dpophttp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

// Settings are a handler's device binding options, the same on seckill_token, seckill_gate
// and seckill_room (docs/DESIGN.md, "Device-bound tokens and tickets"). A shop sets the same
// value on the three handlers of a sale's routes.
type Settings struct {
	// DeviceBinding: "off" (default: tokens and tickets are bearer values, the demo's curl
	// steps work), "optional" (a request with a DPoP proof gets a token or ticket bound to
	// its key, which is then spent only with a proof of that key) or "required" (nothing is
	// issued or spent without a proof).
	DeviceBinding dpop.Binding `json:"device_binding,omitempty"`
	// ProofMaxAge is how old a proof's iat may be. Default 60s. The gate remembers a
	// purchase proof's jti this long (plus 5s of leeway), so a replay is refused everywhere.
	ProofMaxAge caddy.Duration `json:"proof_max_age,omitempty"`
}

// Validate checks the settings and sets the default.
func (s *Settings) Validate() error {
	b, err := dpop.ParseBinding(string(s.DeviceBinding))
	if err != nil {
		return err
	}
	s.DeviceBinding = b
	if s.ProofMaxAge < 0 {
		return fmt.Errorf("proof_max_age must not be negative")
	}
	if s.ProofMaxAge == 0 {
		s.ProofMaxAge = caddy.Duration(dpop.DefaultMaxAge)
	}
	return nil
}

// Enabled reports whether proofs are read at all.
func (s *Settings) Enabled() bool {
	return s.DeviceBinding == dpop.Optional || s.DeviceBinding == dpop.Required
}

// Option parses the handlers' shared options; ok false for any other name.
//
//	device_binding off|optional|required
//	proof_max_age  <duration>
func (s *Settings) Option(d *caddyfile.Dispenser, name string) (ok bool, err error) {
	switch name {
	case "device_binding":
		var v string
		if err := handler.StringArg(d, &v); err != nil {
			return true, err
		}
		b, err := dpop.ParseBinding(v)
		if err != nil {
			return true, d.Err(err.Error())
		}
		s.DeviceBinding = b
		return true, nil
	case "proof_max_age":
		return true, handler.DurationArg(d, &s.ProofMaxAge)
	}
	return false, nil
}

// Check checks r's DPoP header for token ("" at an issue). The method, host and path compared
// are those of the request as it arrived (before any rewrite of the routes). An absent header
// is dpop.ErrMissing; more than one header is dpop.ErrInvalid (RFC 9449: exactly one).
func (s *Settings) Check(r *http.Request, token string, now time.Time) (dpop.Proof, error) {
	vals := r.Header.Values(dpop.Header)
	if len(vals) == 0 {
		return dpop.Proof{}, dpop.ErrMissing
	}
	if len(vals) > 1 {
		return dpop.Proof{}, dpop.ErrInvalid
	}
	// Caddy's copy of the request as it arrived has its method and URL, not its Host.
	method, path := r.Method, r.URL.EscapedPath()
	if o, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && o.URL != nil {
		method, path = o.Method, o.URL.EscapedPath()
	}
	return dpop.Check(vals[0], dpop.Request{Method: method, Host: r.Host, Path: path,
		Token: token, Now: now, MaxAge: time.Duration(s.ProofMaxAge)})
}

// HasProof reports whether r carries a DPoP header.
func HasProof(r *http.Request) bool { return len(r.Header.Values(dpop.Header)) > 0 }
