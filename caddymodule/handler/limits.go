package handler

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/edge"
)

// Limits are the settings every seckill handler shares. Each handler embeds them, so they
// appear inline in its JSON and in its Caddyfile block.
type Limits struct {
	// How long a call to Redis may take before the handler stops waiting for it: the gate
	// and the token issuer then answer 503 unavailable (they fail closed), the throttle
	// applies its zones' on_failure policy. Default 1s (seckill_throttle: 100ms).
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// The most calls this handler may have waiting on Redis at once (counting those whose
	// request already stopped waiting at the timeout, until Redis answers them). Beyond it
	// the handler sheds: it answers at once without touching Redis (503 unavailable with
	// Retry-After; the throttle applies its zones' on_failure policy), so an overloaded or
	// stalled Redis costs fast refusals and bounded memory instead of a growing pile of
	// queued scripts. A shed request was never decided: retrying it is always safe.
	// Default 4096; -1 disables the bound.
	MaxPending int `json:"max_pending,omitempty"`

	// Hand refusals to the server's `handle_errors` routes as caddyhttp errors instead of
	// writing the JSON refusal body. Retry-After is set either way; `{err.status_code}` and
	// `{err.message}` ("<code>: <message>") carry the rest. Default false: without
	// handle_errors routes Caddy would answer with an empty body.
	HandleErrors bool `json:"handle_errors,omitempty"`
}

// Caller applies the defaults (timeout def) and returns the handler's bound on Redis calls.
func (l *Limits) Caller(def time.Duration) edge.Caller {
	if l.Timeout <= 0 {
		l.Timeout = caddy.Duration(def)
	}
	if l.MaxPending == 0 {
		l.MaxPending = edge.DefaultMaxPending
	}
	return edge.Caller{Timeout: time.Duration(l.Timeout), Pending: edge.NewPending(l.MaxPending)}
}

// Writer returns the handler's refusal writer.
func (l *Limits) Writer(jitter time.Duration) Writer {
	return Writer{HandleErrors: l.HandleErrors, Jitter: jitter}
}

// UnmarshalOption parses the Caddyfile option at d when it is one of the limits
// (timeout <duration>, max_pending <n>, handle_errors); ok is false for any other.
func (l *Limits) UnmarshalOption(d *caddyfile.Dispenser) (ok bool, err error) {
	switch d.Val() {
	case "timeout":
		return true, Duration(d, &l.Timeout)
	case "max_pending":
		return true, Int(d, &l.MaxPending)
	case "handle_errors":
		return true, Flag(d, &l.HandleErrors)
	}
	return false, nil
}

// OptionParser is a group of options several handlers share (Subject).
type OptionParser interface {
	UnmarshalOption(d *caddyfile.Dispenser) (ok bool, err error)
}

// UnmarshalBlock parses a handler's Caddyfile directive: the directive name, no argument, and
// a block whose options are the limits (handled here), those of the shared groups, or the
// handler's own, which option parses with d at the option's name. An option nobody knows is an
// error naming directive.
func (l *Limits) UnmarshalBlock(d *caddyfile.Dispenser, directiveName string, option func(name string) (known bool, err error), shared ...OptionParser) error {
	return Top(d, directiveName, func(name string) (bool, error) {
		for _, p := range append([]OptionParser{l}, shared...) {
			if ok, err := p.UnmarshalOption(d); ok {
				return true, err
			}
		}
		return option(name)
	})
}

// Directive is the httpcaddyfile.UnmarshalFunc of a handler whose pointer type parses its own
// Caddyfile block: RegisterHandlerDirective("seckill_gate", refusal.Directive[Gate]).
func Directive[T any, PT interface {
	*T
	caddyfile.Unmarshaler
	caddyhttp.MiddlewareHandler
}](h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := PT(new(T))
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// Subject is which sale and which user a request is about, as placeholders read per request.
// The gate, the token issuer and the waiting room embed it, so both appear inline in their
// JSON and Caddyfile blocks.
type Subject struct {
	// The sale id, usually a placeholder. Default {http.request.uri.path.1}, the second path
	// segment (/seckill/<sale>/buy, /token, /queue). Ids are 1 to 64 characters of
	// [A-Za-z0-9_-]; anything else is refused with 400 bad_request.
	Sale string `json:"sale,omitempty"`

	// The user id, usually a placeholder set by an authentication module. Default
	// {http.auth.user.id}; the demo Caddyfile uses {http.request.header.X-User-ID}. An empty
	// value is refused with 401 unauthenticated.
	User string `json:"user,omitempty"`
}

// The defaults of a Subject.
const (
	DefaultSale = "{http.request.uri.path.1}"
	DefaultUser = "{http.auth.user.id}"
)

// SetDefaults fills the placeholders left empty.
func (s *Subject) SetDefaults() {
	if s.Sale == "" {
		s.Sale = DefaultSale
	}
	if s.User == "" {
		s.User = DefaultUser
	}
}

// UnmarshalOption parses the Caddyfile option at d when it is sale or user; ok is false for
// any other. Pass the Subject to Limits.UnmarshalBlock to have it tried on every option.
func (s *Subject) UnmarshalOption(d *caddyfile.Dispenser) (ok bool, err error) {
	switch d.Val() {
	case "sale":
		return true, String(d, &s.Sale)
	case "user":
		return true, String(d, &s.User)
	}
	return false, nil
}

// Module is the caddy.ModuleInfo of a handler whose pointer type is the module:
// func (Gate) CaddyModule() caddy.ModuleInfo { return refusal.Module[Gate]("http.handlers.seckill_gate") }.
func Module[T any, PT interface {
	*T
	caddy.Module
}](id caddy.ModuleID) caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: id, New: func() caddy.Module { return PT(new(T)) }}
}
