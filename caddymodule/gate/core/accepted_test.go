package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// The 202 answer names the variant and quantity only when the sale has variants or more than
// one unit was bought (the refusals: TestGateVariantRefusals).
func TestGateVariantAnswers(t *testing.T) {
	cases := []struct {
		v    Verdict
		want string
	}{
		{Verdict{OrderID: "o1"}, `{"order_id":"o1","status":"queued"}`},
		{Verdict{OrderID: "o1", Quantity: 1}, `{"order_id":"o1","status":"queued"}`},
		{Verdict{OrderID: "o1", Variant: "red", Quantity: 1}, `{"order_id":"o1","status":"queued","variant":"red","quantity":1}`},
		{Verdict{OrderID: "o1", Quantity: 3}, `{"order_id":"o1","status":"queued","quantity":3}`},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		WriteAccepted(w, c.v)
		if w.Body.String() != c.want || w.Code != http.StatusAccepted || w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
			t.Errorf("202 for %+v: %d %s, want %s", c.v, w.Code, w.Body, c.want)
		}
	}
}
