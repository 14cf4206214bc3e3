package core

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
)

// Outcome is what the handler answered. Its values are the metric label and, for refusals,
// the contract's code.
type Outcome string

// Outcomes.
const (
	Issued           Outcome = "issued"
	Unauthenticated  Outcome = contract.CodeUnauthenticated
	BadRequest       Outcome = contract.CodeBadRequest
	MethodNotAllowed Outcome = "method_not_allowed" // answered with code bad_request
	UnknownSale      Outcome = contract.CodeUnknownSale
	NotStarted       Outcome = contract.CodeNotStarted
	Ended            Outcome = contract.CodeEnded
	Paused           Outcome = contract.CodePaused
	AlreadyBought    Outcome = contract.CodeAlreadyBought
	SoldOut          Outcome = contract.CodeSoldOut
	Unavailable      Outcome = contract.CodeUnavailable
	NotAdmitted      Outcome = contract.CodeNotAdmitted
	// Misconfigured: the sale has a waiting room and this handler has no require_admission,
	// so it cannot tell who the room admitted. Answered 503 unavailable (the client can do
	// nothing about it), logged and counted under its own label for the operator.
	Misconfigured Outcome = hcore.OutcomeMisconfigured
	// RoomMissing: the sale says it has a room (its meta field "room") but the room's state is
	// gone from Redis. Answered 503 unavailable: nobody is let through without the room.
	RoomMissing Outcome = hcore.OutcomeRoomMissing
	// DrawMissing: the sale is a draw (its meta field "draw") and the script was not given the
	// draw's entries. Answered 503 unavailable: nobody gets a token around the draw.
	DrawMissing Outcome = hcore.OutcomeDrawMissing
	// KeyMismatch: the user's room place is bound to a device key (his first bound entry's)
	// and this request's proof is of another key, or there is none: 403 proof_key_mismatch.
	KeyMismatch Outcome = contract.CodeProofKeyMismatch
)

// Outcomes returns every outcome a request can get (the metric labels to show from the start).
func Outcomes() []Outcome { return slices.Clone(outcomes) }

var outcomes = []Outcome{Issued, Unauthenticated, BadRequest, MethodNotAllowed, UnknownSale, NotStarted, Ended, Paused, AlreadyBought, SoldOut, Unavailable, NotAdmitted, Misconfigured, RoomMissing, DrawMissing, KeyMismatch}

// sharded is the script's answer on a sharded sale's own keys; it never reaches a client.
const sharded Outcome = hcore.OutcomeSharded

// Throttled is the outcome of a request that the throttle's zones refused inside the token
// script's call (Request.Zones): nothing was issued, the zones answer the client.
const Throttled Outcome = hcore.OutcomeThrottled

// refusals holds the answer of every refusing outcome.
var refusals = map[Outcome]hcore.Refusal{
	Unauthenticated: hcore.Unauthenticated,
	BadRequest:      hcore.BadRequest,
	MethodNotAllowed: {Status: http.StatusMethodNotAllowed, Code: contract.CodeBadRequest,
		Message: "use POST to ask for a purchase token"},
	UnknownSale: hcore.UnknownSale,
	NotStarted: {Status: http.StatusForbidden, Code: contract.CodeNotStarted,
		Message: "tokens are not issued yet: the sale has not started"},
	Ended:         hcore.Ended,
	Paused:        hcore.Paused,
	AlreadyBought: hcore.AlreadyBought,
	SoldOut:       hcore.SoldOut,
	NotAdmitted: {Status: http.StatusForbidden, Code: contract.CodeNotAdmitted,
		Message: "this sale has a waiting room: wait for your admission (GET /seckill/<sale>/queue), then ask again"},
	Unavailable: {Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "the token service is unavailable: retry shortly"},
	Misconfigured: {Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "this sale has a waiting room and this gateway does not check admissions (seckill_token require_admission): no token is issued for it"},
	RoomMissing: hcore.RoomMissing,
	DrawMissing: hcore.DrawMissing,
	KeyMismatch: {Status: http.StatusForbidden, Code: contract.CodeProofKeyMismatch,
		Message: "your place in the waiting room is bound to another device's key: take the token on that device"},
}

// table is the token issuer's outcome table: 200 for Issued, the answer of every refusing
// outcome, unavailable for anything else.
var table = hcore.NewTable(hcore.Table[Outcome]{Success: Issued, SuccessStatus: http.StatusOK, SuccessMessage: "issued",
	Fallback: Unavailable, Refusals: refusals})

// Refusal is the answer of a refusing outcome; anything unknown answers unavailable.
func (o Outcome) Refusal() hcore.Refusal { return table.Refusal(o) }

// Status is the HTTP status of the outcome.
func (o Outcome) Status() int { return table.Status(o) }

// Code is the refusal code of the body ("" for Issued).
func (o Outcome) Code() string { return table.Code(o) }

// Message is the human-readable refusal message ("issued" for Issued).
func (o Outcome) Message() string { return table.Message(o) }

// Result is the decision on one request.
type Result struct {
	Outcome Outcome
	Expires time.Time // when Issued: the expiry Redis decided
	OrderID string    // when AlreadyBought: the user's order
	Token   string
	Claims  tokenformat.Claims
	// Draw is set on NotAdmitted when the sale is a draw: the user holds no live win (rather
	// than no admission to a waiting room), which the refusal's message says.
	Draw bool
}

// Refusal is the answer of a refusing result: its outcome's, with a draw's message on a draw
// sale's not_admitted.
func (r Result) Refusal() hcore.Refusal {
	if r.Outcome == NotAdmitted && r.Draw {
		return hcore.NotWon
	}
	return r.Outcome.Refusal()
}

// Reply is the token_issue script's answer.
type Reply struct {
	Outcome Outcome
	Expires time.Time // Issued
	OrderID string    // AlreadyBought
	Shards  int       // sharded: the shard count
	Draw    bool      // NotAdmitted: on a draw sale (reply[3] = "draw")
	// Zones is the zones' part of a combined reply (Request.Zones), for their Answer.
	Zones []any
}

// parseReply reads the token_issue script's reply {outcome, exp_ms, now_ms[, order_id]}.
func parseReply(reply []any) (Reply, error) {
	if len(reply) < 3 {
		return Reply{}, fmt.Errorf("%d elements, want 3 or 4", len(reply))
	}
	s, _ := reply[0].(string)
	exp, ok := reply[1].(int64)
	if !ok {
		return Reply{}, fmt.Errorf("exp_ms %T", reply[1])
	}
	switch o := Outcome(s); o {
	case Issued:
		if exp <= 0 {
			return Reply{}, fmt.Errorf("issued with exp_ms %d", exp)
		}
		return Reply{Outcome: o, Expires: time.UnixMilli(exp)}, nil
	case AlreadyBought:
		var order string
		if len(reply) > 3 {
			order, _ = reply[3].(string)
		}
		if order == "" {
			return Reply{}, fmt.Errorf("already_bought without an order id")
		}
		return Reply{Outcome: o, OrderID: order}, nil
	case sharded:
		if exp < 2 || exp > contract.MaxShards {
			return Reply{}, fmt.Errorf("sharded with shard count %d", exp)
		}
		return Reply{Outcome: o, Shards: int(exp)}, nil
	case NotAdmitted:
		return Reply{Outcome: o, Draw: len(reply) > 3 && reply[3] == "draw"}, nil
	case UnknownSale, NotStarted, Ended, Paused, SoldOut, Misconfigured, RoomMissing, DrawMissing, KeyMismatch:
		return Reply{Outcome: o}, nil
	default:
		return Reply{}, fmt.Errorf("unknown outcome %q", s)
	}
}

// WriteIssued writes the 200 of an issued token (seckill_token's answer).
func WriteIssued(w http.ResponseWriter, res Result) {
	// A token is a credential of one user: no cache may keep it (Cache-Control no-store).
	// Token and timestamp are URL-safe ASCII: no JSON escaping needed.
	_ = hcore.Answer(w, http.StatusOK, func(body []byte) []byte {
		body = append(body, `{"token":"`...)
		body = append(body, res.Token...)
		body = append(body, `","expires_at":"`...)
		body = res.Claims.Expires.UTC().AppendFormat(body, time.RFC3339)
		return append(body, `"}`...)
	})
}
