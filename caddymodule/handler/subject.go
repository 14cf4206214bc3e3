package handler

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/seckilledge/seckill/contract"
)

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
		return true, StringArg(d, &s.Sale)
	case "user":
		return true, StringArg(d, &s.User)
	}
	return false, nil
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
