package handler

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/contract"
)

// Subject is which sale and which user a request is about, as placeholders read per request.
// The gate, the token issuer and the waiting room embed it, so both appear inline in their
// JSON and Caddyfile blocks.
type Subject struct {
	// The path prefix of the edge's routes this handler serves, such as /shop-api/drop (the
	// site's routes must match the same paths). It places the default sale: the segment after
	// it. Default: the seckill app's prefix, itself default /seckill.
	Prefix string `json:"prefix,omitempty"`

	// The sale id, usually a placeholder. Default the path segment after the prefix:
	// {http.request.uri.path.1} under /seckill (/seckill/<sale>/buy, /token, /queue),
	// {http.request.uri.path.2} under /shop-api/drop. Ids are 1 to 64 characters of
	// [A-Za-z0-9_-]; anything else is refused with 400 bad_request.
	Sale string `json:"sale,omitempty"`

	// The user id, usually a placeholder set by an authentication module. Default
	// {http.auth.user.id}; the demo Caddyfile uses {http.request.header.X-User-ID}. An empty
	// value is refused with 401 unauthenticated.
	User string `json:"user,omitempty"`
}

// The defaults of a Subject.
const (
	DefaultSale = "{http.request.uri.path.1}" // under DefaultPrefix
	DefaultUser = "{http.auth.user.id}"
)

// SetDefaults fills the prefix and the placeholders left empty.
func (s *Subject) SetDefaults() {
	if s.Prefix == "" {
		s.Prefix = DefaultPrefix
	}
	if s.Sale == "" {
		s.Sale = SalePlaceholder(s.Prefix)
	}
	if s.User == "" {
		s.User = DefaultUser
	}
}

// Inherit takes the seckill app's prefix when the handler sets none, and checks the prefix
// (CheckPrefix). It returns the URL space the handler serves: its prefix and the app's
// orders_prefix. Call it in Provision, before SetDefaults.
func (s *Subject) Inherit(ctx caddy.Context) (URLSpace, error) {
	space, err := InheritURLSpace(ctx)
	if err != nil {
		return URLSpace{}, err
	}
	if s.Prefix == "" {
		s.Prefix = space.Prefix
	}
	if err := CheckPrefix(s.Prefix); err != nil {
		return URLSpace{}, fmt.Errorf("prefix: %w", err)
	}
	space.Prefix = s.Prefix
	return space, nil
}

// UnmarshalOption parses the Caddyfile option at d when it is sale or user; ok is false for
// any other. Pass the Subject to Limits.UnmarshalBlock to have it tried on every option.
func (s *Subject) UnmarshalOption(d *caddyfile.Dispenser) (ok bool, err error) {
	switch d.Val() {
	case "prefix":
		return true, StringArg(d, &s.Prefix)
	case "sale":
		return true, StringArg(d, &s.Sale)
	case "user":
		return true, StringArg(d, &s.User)
	}
	return false, nil
}

// Replacer is the request's placeholder replacer, as Caddy's server sets it; a fresh one for a
// request that came through no server (a handler's unit test).
func Replacer(r *http.Request) *caddy.Replacer {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok && repl != nil {
		return repl
	}
	return caddy.NewReplacer()
}

// User reads the user id a handler's placeholder template names (its `user` option) and checks
// it against the id pattern: no user is 401 unauthenticated, a malformed one 400 bad_request;
// ok is false with the refusal to answer.
func User(repl *caddy.Replacer, template string) (string, Refusal, bool) {
	user := repl.ReplaceAll(template, "")
	if user == "" {
		return "", Unauthenticated, false
	}
	if !contract.ValidID(user) {
		return "", BadRequest, false
	}
	return user, Refusal{}, true
}
