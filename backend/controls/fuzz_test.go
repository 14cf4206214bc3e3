package controls

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract"
)

// The stock control's body faces the network: no input panics the parser, and what it accepts
// is a bounded, non-zero change with a well-formed request id and, when named, a well-formed
// variant.
func FuzzParseStockRequest(f *testing.F) {
	f.Add(`{"add":5,"request_id":"r-1"}`)
	f.Add(`{"add":-1000000001,"request_id":"x"}`)
	f.Add(`{"add":0,"request_id":""}`)
	f.Add(`{"add":1,"request_id":"a b","extra":1}`)
	f.Add(`{"add":3,"request_id":"r-2","variant":"eu42"}`)
	f.Add(`{"add":-3,"request_id":"r-3","variant":"eu/42"}`)
	f.Add(`{"add":3,"request_id":"r-4","variant":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := ParseStockRequest(strings.NewReader(body))
		if err != nil {
			return
		}
		if req.Add == 0 || req.Add > 1e9 || req.Add < -1e9 || !requestIDPattern.MatchString(req.RequestID) ||
			req.Variant != "" && !contract.ValidVariantID(req.Variant) {
			t.Fatalf("accepted %+v", req)
		}
	})
}

func FuzzParseEndsAt(f *testing.F) {
	f.Add(`{"ends_at":"2026-11-30T22:00:00Z"}`)
	f.Add(`{"ends_at":null}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		if at, err := ParseEndsAt(strings.NewReader(body)); err == nil && at.IsZero() {
			t.Fatal("accepted a zero ends_at")
		}
	})
}
