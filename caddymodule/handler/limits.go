package handler

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

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
		return true, DurationArg(d, &l.Timeout)
	case "max_pending":
		return true, IntArg(d, &l.MaxPending)
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
	return ParseDirective(d, directiveName, func(name string) (bool, error) {
		for _, p := range append([]OptionParser{l}, shared...) {
			if ok, err := p.UnmarshalOption(d); ok {
				return true, err
			}
		}
		return option(name)
	})
}
