package core

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract"
)

// AppendBody writes byte for byte what encoding/json writes for the contract's Refusal,
// whatever its strings hold: the seeds need every kind of escaping encoding/json does.
func FuzzAppendBodyIsEncodingJSONs(f *testing.F) {
	for _, r := range []Refusal{
		{Code: "sold_out", Message: "sold out"},
		{Code: "already_bought", Message: "you have bought", OrderID: "0190c0de-7e57-7abc-8def-0123456789ab"},
		{Code: "sold_out", Message: "variant gone", Variant: "red-XL_2"},
		{Code: "limit_reached", Message: "limit", Held: 3},
		{Code: "limit_reached", Message: "negative", Held: -2},
		{Code: `q"uo\te`, Message: "<script>&amp;</script>"},
		{Code: "ctl", Message: "\x00\x01\b\f\n\r\t\x1f\x7f end"},
		{Code: "utf8", Message: "héllo wörld 売り切れ 🛒"},
		{Code: "bad", Message: "bad \xff\xfe utf-8 \xe2\x82 cut"},
		{Code: "js", Message: "line\u2028sep\u2029para"},
		{Code: "", Message: "", OrderID: "o<1>", Variant: "v&w"},
	} {
		f.Add(r.Code, r.Message, r.OrderID, r.Variant, r.Held)
	}
	f.Fuzz(func(t *testing.T, code, msg, order, variant string, held int) {
		want, err := json.Marshal(contract.Refusal{Code: code, Message: msg, OrderID: order, Variant: variant, Held: held})
		if err != nil {
			t.Fatal(err)
		}
		r := Refusal{Code: code, Message: msg, OrderID: order, Variant: variant, Held: held}
		if got := AppendBody(nil, r); !bytes.Equal(got, want) {
			t.Fatalf("AppendBody(%q) = %s, want %s", []string{code, msg, order, variant}, got, want)
		}
	})
}

// FuzzSameOrigin: whatever Origin and Sec-Fetch-Site a client sends, the rule answers without
// panicking, and what it accepts names the request's own host.
func FuzzSameOrigin(f *testing.F) {
	for _, s := range [][2]string{{"https://shop.example", ""}, {"null", ""}, {"https://shop.example:443", "same-origin"},
		{"https://evil.example", "cross-site"}, {"", "none"}, {"https://shop.example/", ""}, {"https://user@shop.example", ""},
		{"HTTPS://SHOP.EXAMPLE", ""}, {"https://shop.example\x00", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, origin, site string) {
		r := httptest.NewRequest("POST", "https://shop.example/seckill/s1/buy", nil)
		r.Header["Origin"] = []string{origin}
		if site != "" {
			r.Header["Sec-Fetch-Site"] = []string{site}
		}
		if !SameOrigin(r) {
			return
		}
		if site == "cross-site" {
			t.Fatalf("cross-site accepted with Origin %q", origin)
		}
		if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, "shop.example") {
			t.Fatalf("Origin %q accepted for host shop.example", origin)
		}
	})
}
