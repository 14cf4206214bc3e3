package relay

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
)

// encodeEntry turns an outbox entry (o: order id, u: user id, t: accepted ms; and on a sale
// with variants or a limit above 1, v: variant, q: quantity, n: the user's purchase number)
// into the contract's message body. sale may be a shard id: the message names the sale. An
// entry without v, q and n is a single-stock sale's: its message has none of those fields.
func encodeEntry(sale string, m redis.XMessage) ([]byte, string, error) {
	sale = contract.BaseSale(sale)
	order, _ := m.Values["o"].(string)
	user, _ := m.Values["u"].(string)
	ts, _ := m.Values["t"].(string)
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, "", fmt.Errorf("bad accepted time %q", ts)
	}
	msg := contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: time.UnixMilli(ms).UTC()}
	msg.Variant, _ = m.Values["v"].(string)
	if msg.Quantity, err = entryInt(m, "q"); err != nil {
		return nil, "", err
	}
	if msg.SeqNo, err = entryInt(m, "n"); err != nil {
		return nil, "", err
	}
	if err := msg.Validate(); err != nil {
		return nil, "", err
	}
	body, err := marshalOrder(msg)
	return body, order, err
}

// entryInt reads the optional integer field f of an outbox entry; 0 when absent.
func entryInt(m redis.XMessage, f string) (int, error) {
	s, ok := m.Values[f].(string)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("bad %s %q", f, s)
	}
	return n, nil
}

// marshalOrder is json.Marshal(m), byte for byte, without reflection (which was a third of
// the relay's own work per entry). The fast path covers what the relay sends: ids whose bytes
// JSON writes as they are, and a time json.Marshal accepts; anything else takes json.Marshal
// itself. FuzzMarshalOrderMatchesJSON checks the equivalence.
func marshalOrder(m contract.OrderMessage) ([]byte, error) {
	if !plainJSON(m.OrderID) || !plainJSON(m.SaleID) || !plainJSON(m.UserID) || !plainJSON(m.Variant) {
		return json.Marshal(m)
	}
	if y := m.AcceptedAt.Year(); y < 0 || y > 9999 || m.AcceptedAt.Location() != time.UTC {
		return json.Marshal(m) // its error, or its zone offset
	}
	b := make([]byte, 0, 64+len(m.OrderID)+len(m.SaleID)+len(m.UserID)+len(time.RFC3339Nano)+len(m.Variant))
	b = append(b, `{"order_id":"`...)
	b = append(b, m.OrderID...)
	b = append(b, `","sale_id":"`...)
	b = append(b, m.SaleID...)
	b = append(b, `","user_id":"`...)
	b = append(b, m.UserID...)
	b = append(b, `","accepted_at":"`...)
	b = m.AcceptedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	// The omitempty fields of a sale with variants or a limit, in the struct's order.
	if m.Variant != "" {
		b = append(b, `,"variant":"`...)
		b = append(b, m.Variant...)
		b = append(b, '"')
	}
	if m.Quantity != 0 {
		b = append(b, `,"quantity":`...)
		b = strconv.AppendInt(b, int64(m.Quantity), 10)
	}
	if m.SeqNo != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, int64(m.SeqNo), 10)
	}
	b = append(b, '}')
	return b, nil
}

// plainJSON reports whether json.Marshal writes s as its bytes between quotes: printable ASCII
// other than the quote, the backslash and the HTML characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
