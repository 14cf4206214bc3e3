package core

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/strictjson"
)

// MaxBodyBytes bounds the buy body: {"variant","quantity"} needs about a hundred bytes; a
// larger body is refused without being read further.
const MaxBodyBytes = 1 << 10

// ErrBadBody is the error of a buy body that is not an empty body or the contract's
// {"variant","quantity"} object.
var ErrBadBody = errors.New("gate: the buy body must be empty or {\"variant\",\"quantity\"} within 1 KiB")

// ReadItem reads what a purchase asks for from the request body: none (no body, or only
// whitespace) is the default item, a sale's only variant and one unit.
func ReadItem(r *http.Request) (Item, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return Item{}, nil
	}
	if r.ContentLength > MaxBodyBytes {
		return Item{}, ErrBadBody
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil || len(b) > MaxBodyBytes {
		return Item{}, ErrBadBody
	}
	return ParseItem(b)
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259): not Unicode's, which
// bytes.TrimSpace would take (a form feed, a no-break space) and encoding/json refuses.
const jsonSpace = " \t\r\n"

// ParseItem parses a buy body: empty, or one JSON object with the optional fields "variant"
// (a variant id, or "" for none) and "quantity" (an integer 1..contract.MaxQuantity). Unknown
// fields, other types and anything after the object are refused with ErrBadBody, so a typo
// is told rather than silently buying the default. So are a key given twice and a key in
// another case ("Quantity"), which encoding/json alone accepts (keeping the last, matching any
// case): whatever reads the body before the gate (a WAF, a log) must see the purchase served.
// Only JSON's whitespace may surround the object; a body of whitespace alone is no body.
func ParseItem(b []byte) (Item, error) {
	if len(b) > MaxBodyBytes {
		return Item{}, ErrBadBody
	}
	b = bytes.Trim(b, jsonSpace)
	if len(b) == 0 {
		return Item{}, nil
	}
	if b[0] != '{' {
		return Item{}, ErrBadBody
	}
	var body struct {
		Variant  *string `json:"variant"`
		Quantity *int    `json:"quantity"`
	}
	if err := strictjson.Unmarshal(b, &body); err != nil {
		return Item{}, ErrBadBody
	}
	var it Item
	if body.Variant != nil {
		if *body.Variant != "" && !contract.ValidVariantID(*body.Variant) {
			return Item{}, ErrBadBody
		}
		it.Variant = *body.Variant
	}
	if body.Quantity != nil {
		if *body.Quantity < 1 || *body.Quantity > contract.MaxQuantity {
			return Item{}, ErrBadBody
		}
		it.Quantity = *body.Quantity
	}
	return it, nil
}
