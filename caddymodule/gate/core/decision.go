package core

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/edge"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/contract"
)

// Outcome is what the gate decided for one purchase. Its string is the stable code clients see
// ("accepted" for a win), the value of {http.seckill.outcome} and the metrics' outcome label.
type Outcome string

// Outcomes. Every refusal is also a contract code.
const (
	Accepted        Outcome = "accepted"
	Unauthenticated Outcome = contract.CodeUnauthenticated
	BadRequest      Outcome = contract.CodeBadRequest
	UnknownSale     Outcome = contract.CodeUnknownSale
	NotStarted      Outcome = contract.CodeNotStarted
	Ended           Outcome = contract.CodeEnded
	Paused          Outcome = contract.CodePaused
	InvalidToken    Outcome = contract.CodeInvalidToken
	TokenExpired    Outcome = contract.CodeTokenExpired
	TokenUsed       Outcome = contract.CodeTokenUsed
	AlreadyBought   Outcome = contract.CodeAlreadyBought
	SoldOut         Outcome = contract.CodeSoldOut
	LimitReached    Outcome = contract.CodeLimitReached
	Unavailable     Outcome = contract.CodeUnavailable
	NotAdmitted     Outcome = contract.CodeNotAdmitted
	// Misconfigured and RoomMissing are outcomes (metric label, {http.seckill.outcome}) that
	// answer the contract's 503 unavailable: the sale has a waiting room and this gate has no
	// require_admission, or the room's state is gone from Redis. The client can do nothing
	// about either; the operator gets the label and a log line.
	Misconfigured Outcome = hcore.OutcomeMisconfigured
	RoomMissing   Outcome = hcore.OutcomeRoomMissing
	// DrawMissing answers 503 unavailable too: the sale is a draw and the script was not given
	// the draw's entries (a gateway out of date with the scripts); nobody buys around the draw.
	DrawMissing Outcome = hcore.OutcomeDrawMissing
	// Device binding (caddymodule/dpop): a bound token without a proof, or with a proof of
	// another key (a copy), an unbound token where binding is required, a proof spent before.
	ProofRequired    Outcome = contract.CodeProofRequired
	ProofKeyMismatch Outcome = contract.CodeProofKeyMismatch
	UnboundToken     Outcome = contract.CodeUnboundToken
	ProofReplayed    Outcome = contract.CodeProofReplayed
)

// refusals holds the answer of every refusing outcome.
var refusals = map[Outcome]hcore.Refusal{
	Unauthenticated: hcore.Unauthenticated,
	BadRequest:      hcore.BadRequest,
	UnknownSale:     hcore.UnknownSale,
	NotStarted:      hcore.NotStarted,
	Ended:           hcore.Ended,
	Paused:          hcore.Paused,
	InvalidToken: {Status: http.StatusForbidden, Code: contract.CodeInvalidToken,
		Message: "the purchase token is missing or not valid for this user and sale"},
	TokenExpired:  {Status: http.StatusForbidden, Code: contract.CodeTokenExpired, Message: "the purchase token has expired"},
	TokenUsed:     {Status: http.StatusForbidden, Code: contract.CodeTokenUsed, Message: "the purchase token was already used"},
	AlreadyBought: hcore.AlreadyBought,
	SoldOut:       hcore.SoldOut,
	LimitReached: {Status: http.StatusConflict, Code: contract.CodeLimitReached,
		Message: "this purchase would take you above the per-user limit of the sale"},
	Unavailable: {Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "the purchase service is temporarily unavailable; retry later"},
	NotAdmitted: {Status: http.StatusForbidden, Code: contract.CodeNotAdmitted,
		Message: "this sale has a waiting room and you hold no live admission: wait for one (GET /seckill/<sale>/queue)"},
	Misconfigured: {Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "this sale has a waiting room and this gateway does not check admissions (seckill_gate require_admission): it is not sold here"},
	RoomMissing: hcore.RoomMissing,
	DrawMissing: hcore.DrawMissing,

	ProofRequired:    proofRefusal(dpop.ErrMissing),
	ProofKeyMismatch: proofRefusal(dpop.ErrKey),
	UnboundToken:     proofRefusal(dpop.ErrUnbound),
	ProofReplayed:    proofRefusal(dpop.ErrReplayed),
}

func proofRefusal(err error) hcore.Refusal {
	r, _ := dpop.Refusal(err)
	return r
}

// table is the gate's outcome table: 202 queued for Accepted, the answer of every refusing
// outcome, unavailable for anything else.
var table = hcore.NewTable(hcore.Table[Outcome]{Success: Accepted, SuccessStatus: http.StatusAccepted, SuccessMessage: "queued",
	Fallback: Unavailable, Refusals: refusals})

// Refusal is the answer of a refusing outcome; anything unknown answers unavailable.
func (o Outcome) Refusal() hcore.Refusal { return table.Refusal(o) }

// Status is the HTTP status of an outcome.
func (o Outcome) Status() int { return table.Status(o) }

// Message is the human-readable message of a refusal ("queued" for Accepted).
func (o Outcome) Message() string { return table.Message(o) }

// Messages of the bad_request refusals about what is bought (Verdict.Reason).
var badItem = map[string]string{
	ReasonBody:     "the body must be empty or a JSON object {\"variant\",\"quantity\"} of at most 1 KiB",
	ReasonVariant:  "no such variant in this sale (a sale with several variants needs one named)",
	ReasonQuantity: "the quantity must be 1 to the sale's per-user limit",
}

// Reasons of a bad_request refusal about what is bought.
const (
	ReasonBody     = "body"
	ReasonVariant  = "variant"
	ReasonQuantity = "quantity"
	// ReasonDraw is the Reason of a NotAdmitted on a draw sale: the user holds no live win of
	// the variant bought (not the room's admission).
	ReasonDraw = "draw"
)

// Refusal is the answer of a refusing verdict: its outcome's, with what the verdict adds (the
// order of already_bought, the units held of limit_reached, the variant of sold_out, the
// reason of a bad_request about the item).
func (v Verdict) Refusal() hcore.Refusal {
	r := v.Outcome.Refusal()
	r.OrderID = v.OrderID
	switch v.Outcome {
	case LimitReached:
		r.Held = int(v.Held)
	case SoldOut:
		r.Variant = v.Variant
	case BadRequest:
		if m, ok := badItem[v.Reason]; ok {
			r.Message = m
		}
	case NotAdmitted:
		if v.Reason == ReasonDraw {
			r.Message = hcore.NotWon.Message
		}
	}
	return r
}

// Verdict is the answer of one decision.
type Verdict struct {
	Outcome Outcome
	// OrderID is the new order (Accepted) or the user's existing one (AlreadyBought).
	OrderID string
	// StockLeft is the stock after an accepted purchase (of the shard, for a sharded sale).
	StockLeft int64
	// Shards is the shard count of a sharded sale (Outcome Sharded).
	Shards int
	// Target is the sale or shard id the decision was made on (its outbox holds the order).
	Target string

	// Variant is the variant bought (Accepted; the sale's only variant when none was named)
	// or the one that lacks units (SoldOut).
	Variant string
	// Quantity is the units bought (Accepted on a sale with variants or a limit above 1).
	Quantity int
	// Seq is the user's purchase number in the sale (Accepted; 0 on a retried call).
	Seq int64
	// Held is the units the user holds in the sale (LimitReached).
	Held int64
	// Short is set on SoldOut when the sale still sells but not what was asked: the variant,
	// or the quantity. Left is then the units left of the variant (or of the sale).
	Short bool
	Left  int64
	// Reason says what a BadRequest about the item is about (ReasonVariant, ...), or that a
	// NotAdmitted is a draw's (ReasonDraw).
	Reason string
	// Memory is set on an answer from this gateway's sold-out memory: no script ran (at most
	// one plain read of the buyers hash, once per user until the next restock), or from its
	// memory of the sale's window (no Redis command at all).
	Memory bool
	// Starts and Ends are the sale's window (unix ms) the script answered NotStarted or Ended
	// from; 0 when it did not say (the state "ended").
	Starts, Ends int64
}

// Items reports whether an accepted answer names the variant and quantity: on a sale with
// variants, or for more than one unit.
func (v Verdict) Items() bool { return v.Variant != "" || v.Quantity > 1 }

// Sharded is the script's answer on a sharded sale's own meta hash: nothing was decided, the
// decision is to be made on the user's shard (contract/shard.go). It never reaches a client.
const Sharded Outcome = hcore.OutcomeSharded

// General is gate_common.lua's answer on a sale that is not common (variants, a limit above 1,
// a room, a draw, a waitlist): nothing was decided, the decision is gate.lua's. It never
// reaches a client.
const General Outcome = "general"

// Throttled is the verdict of a purchase that the throttle's zones refused inside the gate's
// script call (Purchase.Joint): the gate decided nothing, the joint answers the client.
const Throttled Outcome = hcore.OutcomeThrottled

// Joint is a check of another handler (the throttle's zones) that the gate's script call
// carries (lua.GateThrottled).
type Joint = edge.Joint

// Purchase is what the Store runs the script for: the Request and what the Decider made of it.
type Purchase struct {
	Request
	// Target is the sale id, or the shard id ("<sale>:<i>") of the user's shard of a sharded
	// sale: the script runs on that target's keys.
	Target string
	// OrderID is the id of the order the script writes when it accepts.
	OrderID string
	// TokenValue is tokens.StoreValue of the presented, verified token; "" when the route does
	// not require tokens.
	TokenValue string
	// Admission: the gateway enforces waiting rooms (Decider.RequireAdmission).
	Admission bool
	// ProofWindow is how long the proof's jti stays spent in the script call (KEYS[9]); 0
	// when none is spent. The proof's key thumbprint goes with the purchase either way: on a
	// room sale the user's place, bound to his first bound entry's key, refuses another
	// (ProofKeyMismatch).
	ProofWindow time.Duration
	// General runs gate.lua even for a purchase gate_common.lua could decide: the sale
	// answered General before.
	General bool
}

// ProofJTI is the jti the script spends: the proof's, when the Decider set a ProofWindow.
func (p Purchase) ProofJTI() string {
	if p.ProofWindow <= 0 {
		return ""
	}
	return p.Proof.JTI
}

// Item is what a purchase asks for (the buy body {"variant","quantity"}).
type Item struct {
	Variant  string
	Quantity int // 0 means the default, 1
}

// RelayGroup is the consumer group of the outbox streams. preheat.lua creates it with the
// stream (its name is written there too), and the relay creates it from id 0 on a stream that
// has none, so no entry is ever skipped.
const RelayGroup = "relay"

var errReply = errors.New("gate: unexpected script reply")

// replyOutcomes maps the script's answer codes (lua/gate.lua) to outcomes.
var replyOutcomes = map[int64]Outcome{
	0: Accepted, 1: UnknownSale, 2: NotStarted, 3: Ended, 4: TokenUsed, 5: AlreadyBought,
	6: SoldOut, 7: Sharded, 8: Paused, 9: TokenExpired, 11: BadRequest, 12: LimitReached,
	13: Misconfigured, 14: RoomMissing, 15: NotAdmitted, 16: DrawMissing, 17: ProofReplayed,
	18: ProofKeyMismatch, 19: General,
}

// parseReply reads the gate script's reply.
func parseReply(res []any) (Verdict, error) {
	if len(res) == 0 {
		return Verdict{}, errReply
	}
	code, ok := res[0].(int64)
	if !ok {
		return Verdict{}, errReply
	}
	o, ok := replyOutcomes[code]
	if !ok {
		return Verdict{}, fmt.Errorf("%w: code %d", errReply, code)
	}
	v := Verdict{Outcome: o}
	switch o {
	case Accepted, AlreadyBought:
		v.OrderID, _ = at(res, 1).(string)
		v.StockLeft, _ = at(res, 2).(int64)
		if v.OrderID == "" {
			return Verdict{}, fmt.Errorf("%w: %s without an order id", errReply, o)
		}
		if o == Accepted && len(res) >= 6 {
			v.Variant, _ = res[3].(string)
			q, _ := res[4].(int64)
			v.Seq, _ = res[5].(int64)
			if q < 1 || q > contract.MaxQuantity {
				return Verdict{}, fmt.Errorf("%w: quantity %d", errReply, q)
			}
			v.Quantity = int(q)
		}
	case SoldOut:
		if len(res) >= 3 {
			v.Short = true
			v.Variant, _ = res[1].(string)
			v.Left, _ = res[2].(int64)
		}
	case BadRequest, NotAdmitted:
		v.Reason, _ = at(res, 1).(string)
	case LimitReached:
		held, ok := at(res, 1).(int64)
		if !ok {
			return Verdict{}, fmt.Errorf("%w: limit_reached without held", errReply)
		}
		v.Held = held
	case NotStarted, Ended:
		// The window, when the answer came from it (not from the state "ended").
		v.Starts, _ = at(res, 1).(int64)
		v.Ends, _ = at(res, 2).(int64)
	case Sharded:
		k, _ := at(res, 1).(int64)
		if k < 2 || k > contract.MaxShards {
			return Verdict{}, fmt.Errorf("%w: shard count %d", errReply, k)
		}
		v.Shards = int(k)
	}
	return v, nil
}

func at(res []any, i int) any {
	if i < len(res) {
		return res[i]
	}
	return nil
}
