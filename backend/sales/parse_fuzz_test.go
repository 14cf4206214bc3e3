package sales

import (
	"strings"
	"testing"
)

// The admin API's body parser faces the network (loopback, but still): no input may panic it,
// and what it accepts is a valid sale.
func FuzzParseSaleSpec(f *testing.F) {
	f.Add(`{"id":"demo","stock":100,"starts_at":"2026-11-30T20:00:00Z","ends_at":"2026-11-30T22:00:00Z","pay_within":"15m"}`)
	f.Add(`{"id":"x","stock":-1}`)
	f.Add(`{"id":"a b","stock":1,"starts_at":"2026-11-30T20:00:00Z","ends_at":"2026-11-30T19:00:00Z","pay_within":"-1s"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		spec, err := ParseSaleSpec(strings.NewReader(body))
		if err != nil {
			return
		}
		if pay, err := spec.Validate(); err != nil || pay <= 0 || !spec.EndsAt.After(spec.StartsAt) || spec.Stock < 0 {
			t.Fatalf("accepted an invalid sale %+v (%v)", spec, err)
		}
	})
}
