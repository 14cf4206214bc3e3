package orders

import (
	"github.com/seckilledge/seckill/contract"
)

// decodeOrder parses and validates an order message body exactly as contract.DecodeOrderMessage
// does, only faster for the bodies publishers actually send.
//
// encoding/json's reflection was a fifth of the consumer's CPU (about 4.5 µs a message on the
// benchmark machine). Publishers send one compact object of four string fields, so the fast
// path reads exactly that shape: no whitespace, the four keys spelled as in the contract, each
// once, every value a string of printable ASCII without escapes. For such a body encoding/json
// yields the same strings, and accepted_at goes through the very method encoding/json calls
// (time.Time.UnmarshalJSON on the quoted literal). Anything else (other spacing, escapes,
// unknown, repeated or differently cased keys, a null, a bad time) falls back to
// contract.DecodeOrderMessage, so what is accepted, and every error, stays as it was:
// FuzzDecodeOrderMatchesContract checks it.
func decodeOrder(body []byte) (contract.OrderMessage, error) {
	if m, ok := decodeOrderFast(body); ok {
		return m, m.Validate()
	}
	return contract.DecodeOrderMessage(body)
}

// decodeOrderFast reads the canonical shape; ok is false when body is anything else.
func decodeOrderFast(body []byte) (m contract.OrderMessage, ok bool) {
	n := len(body)
	if n < 2 || body[0] != '{' || body[n-1] != '}' {
		return m, false
	}
	// One allocation for the three strings: they are slices of one copy of the body.
	s := string(body)
	const (
		hasOrder = 1 << iota
		hasSale
		hasUser
		hasAt
	)
	seen := 0
	i := 1
	for {
		key, next, good := quoted(s, i)
		if !good || next >= n || s[next] != ':' {
			return m, false
		}
		start := next + 1
		val, next, good := quoted(s, start)
		if !good || next >= n {
			return m, false
		}
		var bit int
		switch key {
		case "order_id":
			bit, m.OrderID = hasOrder, val
		case "sale_id":
			bit, m.SaleID = hasSale, val
		case "user_id":
			bit, m.UserID = hasUser, val
		case "accepted_at":
			bit = hasAt
			// The quoted literal, as encoding/json hands it to the Unmarshaler.
			if err := m.AcceptedAt.UnmarshalJSON(body[start:next]); err != nil {
				return m, false
			}
		default:
			return m, false
		}
		if seen&bit != 0 {
			return m, false
		}
		seen |= bit
		switch s[next] {
		case ',':
			i = next + 1
		case '}':
			if next != n-1 || seen != hasOrder|hasSale|hasUser|hasAt {
				return m, false
			}
			return m, true
		default:
			return m, false
		}
	}
}

// quoted reads a string starting at s[i] == '"' made only of printable ASCII other than '"' and
// '\\' (for which encoding/json's result is the bytes themselves). It returns the string's
// content and the index just past its closing quote.
func quoted(s string, i int) (val string, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '"':
			return s[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", 0, false
		}
	}
	return "", 0, false
}
