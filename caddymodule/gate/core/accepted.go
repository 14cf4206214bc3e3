package core

import (
	"net/http"
	"strconv"

	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
)

// WriteAccepted writes the 202 of an accepted purchase: its order id and status queued, and
// the variant and quantity only when the sale has variants or more than one unit was bought
// (Verdict.Items).
func WriteAccepted(w http.ResponseWriter, v Verdict) {
	// The order id is a UUID and a variant id is [A-Za-z0-9_-]: no JSON escaping needed.
	_ = hcore.Answer(w, http.StatusAccepted, func(body []byte) []byte {
		body = append(body, `{"order_id":"`...)
		body = append(body, v.OrderID...)
		body = append(body, `","status":"queued"`...)
		if v.Items() {
			if v.Variant != "" {
				body = append(body, `,"variant":"`...)
				body = append(body, v.Variant...)
				body = append(body, '"')
			}
			body = append(body, `,"quantity":`...)
			body = strconv.AppendInt(body, int64(v.Quantity), 10)
		}
		return append(body, '}')
	})
}
