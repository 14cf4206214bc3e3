// Package auth is the admin listener's tokens and role check: the named tokens of
// SECKILL_ADMIN_TOKENS (and the single SECKILL_ADMIN_TOKEN of older setups), and the Guard that
// lets only the given roles through to a route.
package auth

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/ui"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/weaksecret"
)

type namedToken struct {
	secret []byte
	who    httpapi.Principal
}

// Tokens holds the named admin tokens. The zero value accepts nothing.
type Tokens struct{ list []namedToken }

// ParseTokens reads SECKILL_ADMIN_TOKENS ("name:token:role,..."; the role may be left out and
// means admin) and SECKILL_ADMIN_TOKEN (one admin named "admin"). Every token must be at least
// strong (weaksecret.Check: 32 bytes or more, not a published or trivially patterned value),
// names and tokens unique.
func ParseTokens(named, single string) (*Tokens, error) {
	t := &Tokens{}
	seenName := map[string]bool{}
	add := func(name, secret string, role httpapi.Role) error {
		if !contract.ValidID(name) {
			return fmt.Errorf("admin token name %q: want %s", name, "1-64 of [A-Za-z0-9_-]")
		}
		if seenName[name] {
			return fmt.Errorf("admin token name %q given twice", name)
		}
		// A guessable admin token opens every control: refuse to start with one.
		if err := weaksecret.Check(secret); err != nil {
			return fmt.Errorf("admin token %q is refused: %w (make one with `openssl rand -hex 24`)", name, err)
		}
		switch role {
		case httpapi.RoleAdmin, httpapi.RoleViewer, httpapi.RoleShop:
		default:
			return fmt.Errorf("admin token %q: unknown role %q (admin, viewer, shop)", name, role)
		}
		for _, o := range t.list {
			if subtle.ConstantTimeCompare(o.secret, []byte(secret)) == 1 {
				return fmt.Errorf("admin tokens %q and %q are the same secret", o.who.Name, name)
			}
		}
		seenName[name] = true
		t.list = append(t.list, namedToken{secret: []byte(secret), who: httpapi.Principal{Name: name, Role: role}})
		return nil
	}
	for _, item := range strings.Split(named, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		role := httpapi.RoleAdmin
		switch len(parts) {
		case 2:
		case 3:
			role = httpapi.Role(parts[2])
		default:
			return nil, fmt.Errorf("SECKILL_ADMIN_TOKENS entry %d: want name:token:role", len(t.list)+1)
		}
		if err := add(parts[0], parts[1], role); err != nil {
			return nil, err
		}
	}
	if single != "" {
		if err := add("admin", single, httpapi.RoleAdmin); err != nil {
			return nil, fmt.Errorf("SECKILL_ADMIN_TOKEN: %w", err)
		}
	}
	return t, nil
}

// Empty reports whether no token is configured.
func (t *Tokens) Empty() bool { return t == nil || len(t.list) == 0 }

// Lookup finds the principal of a presented secret. Every configured token is compared, in
// constant time, so the answer's timing says nothing about which one matched.
func (t *Tokens) Lookup(secret string) (httpapi.Principal, bool) {
	var who httpapi.Principal
	found := false
	if t == nil || secret == "" {
		return who, false
	}
	for _, e := range t.list {
		if subtle.ConstantTimeCompare(e.secret, []byte(secret)) == 1 {
			who, found = e.who, true
		}
	}
	return who, found
}

// Single is the token set of older setups: one admin token (SECKILL_ADMIN_TOKEN), named
// "admin", taken as given (ParseTokens checks its strength at start-up; tests and tools pass
// their own).
func Single(secret string) *Tokens {
	if secret == "" {
		return &Tokens{}
	}
	return &Tokens{list: []namedToken{{secret: []byte(secret), who: httpapi.Principal{Name: "admin", Role: httpapi.RoleAdmin}}}}
}

// Guard lets only the given roles through to a route: 401 without a known token, 403 for a
// known token of another role, 400 for an invalid {id}. The principal is in the request's
// context (httpapi.PrincipalFrom).
type Guard struct {
	// Tokens are the tokens it knows (nil: none).
	Tokens *Tokens
}

// Allow wraps next so that only the given roles reach it.
func (g Guard) Allow(next http.HandlerFunc, roles ...httpapi.Role) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The live page's session (ui.Cockpit.FromSession) stands for a token; otherwise the
		// Bearer header.
		who, ok := ui.SessionPrincipal(r.Context())
		if !ok {
			who, ok = g.Tokens.Lookup(httpapi.Bearer(r))
		}
		if !ok {
			httpapi.Refuse(w, http.StatusUnauthorized, contract.CodeUnauthenticated, "admin token required")
			return
		}
		permitted := false
		for _, role := range roles {
			permitted = permitted || who.Role == role
		}
		if !permitted {
			httpapi.Refuse(w, http.StatusForbidden, httpapi.CodeForbidden, fmt.Sprintf("token %q (role %s) may not do this", who.Name, who.Role))
			return
		}
		if id := r.PathValue("id"); id != "" && !contract.ValidID(id) {
			httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "invalid id")
			return
		}
		next(w, r.WithContext(httpapi.WithPrincipal(r.Context(), who)))
	}
}

// Admin lets only admin tokens through (every control and write).
func (g Guard) Admin(next http.HandlerFunc) http.HandlerFunc { return g.Allow(next, httpapi.RoleAdmin) }

// Viewer lets admin and viewer tokens through (read-only admin routes).
func (g Guard) Viewer(next http.HandlerFunc) http.HandlerFunc {
	return g.Allow(next, httpapi.RoleAdmin, httpapi.RoleViewer)
}

// Shop lets only shop tokens through: payment is the shop's word (an operator's token may not
// mark orders paid).
func (g Guard) Shop(next http.HandlerFunc) http.HandlerFunc { return g.Allow(next, httpapi.RoleShop) }
