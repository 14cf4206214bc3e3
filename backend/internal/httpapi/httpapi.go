// Package httpapi is the HTTP vocabulary every part of the backend answers in: the contract's
// JSON refusals and the backend's own codes, JSON answers, and the caller the admin middleware
// authenticated (Principal, carried in the request's context). The packages that serve routes
// (backend, backend/webhook, ...) import it; it imports none of them.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/seckilledge/seckill/contract"
)

// Backend-only refusal codes (the admin API and the baselines).
const (
	CodeSaleExists = "sale_exists"
	CodeInternal   = "unavailable"
	CodeForbidden  = "forbidden"
	// CodeNotFound and CodeMethodNotAllowed answer a route that does not exist (backend's routes.go).
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeSalePreheated refuses a baseline purchase in a sale the gate is selling.
	CodeSalePreheated   = "sale_preheated"
	CodeUnknownDelivery = "unknown_webhook"
	CodeAlreadyPending  = "already_pending"
	// CodeSeedLost refuses a preheat or a draw whose published seed commitment has no seed in
	// Redis that opens it: the draw is stopped for the operator, never given a new seed.
	CodeSeedLost = "seed_lost"
	// CodeBeaconChainMismatch refuses a draw that names drand quicknet's chain hash with another
	// public key, period or genesis.
	CodeBeaconChainMismatch = "beacon_chain_mismatch"
)

// WriteJSON writes v as the JSON body of an answer with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Refuse writes the contract's refusal body. 503 carries Retry-After.
func Refuse(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	WriteJSON(w, status, contract.Refusal{Code: code, Message: msg})
}

// RefuseBadValue answers 400 bad_request, naming the request's fields, when err is Postgres
// refusing a value the request gave, and reports whether it did: SQLSTATE class 22 (a data
// exception: 22003 numeric_value_out_of_range, 22008 datetime_field_overflow, ...) or 23514
// (check_violation). The API bounds its fields so that these should not happen; if one still
// slips through, it is the client's value, not an outage: "cannot reach its database" (503,
// retry) would have the client retry a request that can never succeed. Call it only
// where err comes from writing the request's values.
func RefuseBadValue(w http.ResponseWriter, err error, fields string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Code, "22") && pe.Code != "23514" {
		return false
	}
	Refuse(w, http.StatusBadRequest, contract.CodeBadRequest,
		fmt.Sprintf("a value of the request does not fit the database (%s): %s", fields, pe.Message))
	return true
}

// Unavailable answers 503 unavailable with Retry-After: the database (or Redis) is out of reach.
func Unavailable(w http.ResponseWriter) {
	Refuse(w, http.StatusServiceUnavailable, CodeInternal, "the order service cannot reach its database; retry shortly")
}

// Role is what a named admin token may do.
type Role string

const (
	// RoleAdmin may read everything and run every control.
	RoleAdmin Role = "admin"
	// RoleViewer may read (sale status, sales list, audit trail, the live page) and nothing else.
	RoleViewer Role = "viewer"
	// RoleShop may confirm payments: the shop's server, never a buyer.
	RoleShop Role = "shop"
)

// Principal is who called the admin API: the token's name (written to the audit trail) and role.
type Principal struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the caller that the admin middleware authenticated.
func WithPrincipal(ctx context.Context, who Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, who)
}

// PrincipalFrom returns the caller that the admin middleware authenticated.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Bearer returns the credentials of "Authorization: Bearer <token>", the scheme matched
// case-insensitively (RFC 9110 section 11.1).
func Bearer(r *http.Request) string {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}

// UserFrom reads the buyer's id: exactly one valid X-User-ID (the gateway sets it from the
// verified token). Two values are refused (400): the gateway refuses them too, and taking the
// first would let a client choose which one counts. When it answers false it has written the
// refusal.
func UserFrom(w http.ResponseWriter, r *http.Request) (string, bool) {
	vals := r.Header.Values("X-User-ID")
	if len(vals) > 1 {
		Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "X-User-ID given more than once")
		return "", false
	}
	user := r.Header.Get("X-User-ID")
	if !contract.ValidID(user) {
		Refuse(w, http.StatusUnauthorized, contract.CodeUnauthenticated, "a valid X-User-ID is required")
		return "", false
	}
	return user, true
}

// ParseLimit reads a page size: a decimal integer from 1 to most in its one canonical form (no
// sign, no leading zero, no space). "+5" and "00005" are refused, not read as 5: a page of an
// immutable, cached answer must have one URL, or every spelling of it is a cache entry of its
// own (and a cache-busting flood looks like distinct pages).
func ParseLimit(v string, most int) (int, bool) {
	if v == "" || len(v) > len(strconv.Itoa(most)) || v[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > most {
		return 0, false
	}
	return n, true
}
