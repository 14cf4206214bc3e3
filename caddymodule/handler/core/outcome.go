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
