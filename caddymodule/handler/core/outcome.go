package core

import "fmt"

// Table is a handler's outcome table: what each outcome of its decision answers. The gate's
// and the token issuer's outcomes are strings (the metric label, {http.seckill.outcome}, and
// for a refusal the contract code); one outcome is the success, every other one answers one
// refusal. The table's logic is written once here; each handler declares only its rows.
type Table[O ~string] struct {
	// Success is the outcome that is no refusal ("accepted", "issued"): answered with
	// SuccessStatus, SuccessMessage its message.
	Success        O
	SuccessStatus  int
	SuccessMessage string
	// Refusals holds the answer of every refusing outcome.
	Refusals map[O]Refusal
	// Fallback is the outcome whose refusal answers any outcome Refusals lacks (unavailable:
	// an outcome nobody wrote a row for never lets a request through).
	Fallback O
}

// NewTable checks t and returns it: a Fallback without a row, or a Success with one, is a
// mistake in the handler's table that would answer a refusal without a status. It panics, so
// the mistake stops the package's initialisation (and every test of it).
func NewTable[O ~string](t Table[O]) Table[O] {
	if _, ok := t.Refusals[t.Fallback]; !ok {
		panic(fmt.Sprintf("outcome table: the fallback %q has no refusal", t.Fallback))
	}
	if _, ok := t.Refusals[t.Success]; ok {
		panic(fmt.Sprintf("outcome table: the success %q has a refusal", t.Success))
	}
	for o, r := range t.Refusals {
		if r.Status < 400 || r.Code == "" {
			panic(fmt.Sprintf("outcome table: %q answers status %d, code %q", o, r.Status, r.Code))
		}
	}
	return t
}

// Refusal is the answer of a refusing outcome; anything the table lacks answers Fallback's.
func (t *Table[O]) Refusal(o O) Refusal {
	if r, ok := t.Refusals[o]; ok {
		return r
	}
	return t.Refusals[t.Fallback]
}

// Status is the HTTP status of an outcome.
func (t *Table[O]) Status(o O) int {
	if o == t.Success {
		return t.SuccessStatus
	}
	return t.Refusal(o).Status
}

// Message is the human-readable message of an outcome.
func (t *Table[O]) Message(o O) string {
	if o == t.Success {
		return t.SuccessMessage
	}
	return t.Refusal(o).Message
}

// Code is the contract code of a refusing outcome's body ("" for the success).
func (t *Table[O]) Code(o O) string {
	if o == t.Success {
		return ""
	}
	return t.Refusal(o).Code
}

// The outcome labels the gate and the token issuer share beyond the contract's codes (which
// are contract.Code*): each declares its typed outcomes from these, so one label is written
// once and the two handlers' metrics and {http.seckill.*outcome} placeholders agree.
const (
	// OutcomeMisconfigured: the sale has a waiting room and the handler has no
	// require_admission (answered 503 unavailable, logged).
	OutcomeMisconfigured = "misconfigured"
	// OutcomeRoomMissing: the sale's room state is gone from Redis (503 unavailable).
	OutcomeRoomMissing = "room_missing"
	// OutcomeDrawMissing: a draw sale reached a script without the draw's entries key (503
	// unavailable).
	OutcomeDrawMissing = "draw_missing"
	// OutcomeThrottled: the throttle's zones refused the request inside the handler's script
	// call; the throttle answers it.
	OutcomeThrottled = "throttled"
	// OutcomeProofRefused: the request's DPoP proof was refused before anything was decided
	// (missing under device_binding required, malformed, for another method or URL, too old).
	OutcomeProofRefused = "proof_refused"
	// OutcomeSharded: the script's answer on a sharded sale's own keys (decide on the user's
	// shard); it never reaches a client.
	OutcomeSharded = "sharded"
)
