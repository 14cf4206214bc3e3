// Package core is the part of caddymodule/handler that the deciding cores of the handlers
// (gate, token, throttle, waiting room, draw) share with their Caddy glue: the Refusal a
// decision answers, the outcome table that maps a handler's outcomes to its refusals, and the
// Generation of the sold-out memory a decision was taken under, Answer, which writes a
// handler's JSON answer (the gate's 202 is written by its core with it), AppendBody, a
// refusal's JSON body, and SameOrigin, the edge's same-origin rule. It imports neither Caddy nor
// any handler, so a core and its tests link only the standard library, contract and Redis
// (TestTheSharedCorePartsLinkNoCaddy).
//
// caddymodule/handler writes a Refusal to the client (JSON body or handle_errors) and
// caddymodule.SaleEvents hands out Generations; both keep aliases of these types.
package core

import (
	"net/http"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// Refusal is one refusal: its HTTP status, the contract code clients switch on, a message
// for people, and for some the order it concerns.
type Refusal struct {
	Status  int
	Code    string // a contract code (contract.Code*)
	Message string
	OrderID string // already_bought: the user's existing order
	Variant string // sold_out of a sale with variants: the variant
	Held    int    // limit_reached: the units the user holds
	// RetryAfter is when a client may try again; sent (rounded up to whole seconds, at least
	// 1) with 429 and 503 only.
	RetryAfter time.Duration
}

// Error makes a Refusal the error of a caddyhttp.HandlerError: "<code>: <message>", which is
// {http.error.message} in handle_errors routes.
func (r Refusal) Error() string { return r.Code + ": " + r.Message }

// Retryable reports whether the status tells the client to come back (429, 503).
func (r Refusal) Retryable() bool {
	return r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable
}

// The refusals every handler shares.
var (
	Unauthenticated = Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "no user identity on this request"}
	BadRequest = Refusal{Status: http.StatusBadRequest, Code: contract.CodeBadRequest,
		Message: "sale and user ids are 1 to 64 characters of [A-Za-z0-9_-]"}
	UnknownSale = Refusal{Status: http.StatusNotFound, Code: contract.CodeUnknownSale, Message: "no such sale"}
	NotStarted  = Refusal{Status: http.StatusForbidden, Code: contract.CodeNotStarted, Message: "the sale has not started"}
	Ended       = Refusal{Status: http.StatusForbidden, Code: contract.CodeEnded, Message: "the sale has ended"}
	SoldOut     = Refusal{Status: http.StatusConflict, Code: contract.CodeSoldOut, Message: "sold out"}
	Paused      = Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodePaused,
		Message: "the sale is paused by the operator; retry later"}
	AlreadyBought = Refusal{Status: http.StatusConflict, Code: contract.CodeAlreadyBought,
		Message: "this user already bought in this sale"}
	Unavailable = Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "the service is temporarily unavailable; retry later"}
	// RoomMissing answers a purchase step of a room sale whose room state is gone from Redis:
	// refused, never sold around the room (the token issuer and the gate alike).
	RoomMissing = Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "this sale's waiting room is not available: retry shortly"}
	// DrawMissing answers a purchase step of a draw sale that reached a script without the
	// draw's entries key: refused, never sold around the draw (the token issuer and the gate
	// alike). Only a caller that is out of date with the scripts can get it.
	DrawMissing = Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "this sale is a draw and this gateway cannot check its winners: retry shortly"}
	// NotWon answers a token or a purchase of a draw sale by a user who holds no live win of
	// what he asks for (DESIGN.md, "Draws"): the same code as the room's not_admitted.
	NotWon = Refusal{Status: http.StatusForbidden, Code: contract.CodeNotAdmitted,
		Message: "this sale is a draw: only a winner buys, the size he won, within his claim window (GET /seckill/<sale>/draw)"}
	// PathMismatch answers a request whose raw path names another sale than the cleaned path
	// the routes matched (/seckill/a/../b/buy).
	PathMismatch = Refusal{Status: http.StatusBadRequest, Code: contract.CodeBadRequest,
		Message: "the request path is not in canonical form"}
)

// Generation is a token to take from the sold-out memory (caddymodule.SaleEvents) before
// asking Redis; pass it back with the answer so that a restock (or a resubscription) that
// arrived meanwhile wins over the older answer. Only the memory reads its fields: to a core it
// is an opaque value, compared whole.
type Generation struct {
	// Epoch counts the memory's (re)subscriptions; Restocks the sale's restocks.
	Epoch, Restocks uint64
}
