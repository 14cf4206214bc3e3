package gate

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract"
)

func TestParseItemAcceptsOnlyTheContractBody(t *testing.T) {
	good := map[string]Item{
		"":                                  {},
		"  \n":                              {},
		"{}":                                {},
		"null":                              {}, // refused below: not an object
		`{"variant":"red-42"}`:              {Variant: "red-42"},
		`{"quantity":2}`:                    {Quantity: 2},
		`{"variant":"red","quantity":1000}`: {Variant: "red", Quantity: 1000},
		` {"variant":"","quantity":1} `:     {Quantity: 1},
		`{"variant":null}`:                  {},
	}
	delete(good, "null")
	for in, want := range good {
		got, err := ParseItem([]byte(in))
		if err != nil || got != want {
			t.Errorf("ParseItem(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := []string{
		"null", "[]", `"red"`, "garbage", "{", `{"variant":"red"} {}`, `{"variant":"red"}x`,
		`{"colour":"red"}`, `{"variant":"a b"}`, `{"variant":"` + strings.Repeat("x", 65) + `"}`,
		`{"variant":1}`, `{"quantity":0}`, `{"quantity":-1}`, `{"quantity":1001}`, `{"quantity":1.5}`,
		`{"quantity":"2"}`, `{"quantity":1e2}`, `{"quantity":99999999999999999999}`,
		`{"variant":"red","pad":"` + strings.Repeat(" ", MaxBodyBytes) + `"}`,
	}
	for _, in := range bad {
		if got, err := ParseItem([]byte(in)); err == nil {
			t.Errorf("ParseItem(%q) = %+v, want refused", in, got)
		}
	}
}

func TestReadItemRefusesABodyAbove1KiB(t *testing.T) {
	pad := strings.Repeat(" ", MaxBodyBytes)
	for _, c := range []struct {
		body   string
		length int64 // -1: unknown (chunked)
		ok     bool
	}{
		{`{"quantity":2}`, -1, true},
		{`{"quantity":2}` + pad[:MaxBodyBytes-14], -1, true},
		{`{"quantity":2}` + pad, -1, false},
		{`{"quantity":2}` + pad, int64(14 + MaxBodyBytes), false},
	} {
		r, _ := http.NewRequest(http.MethodPost, "/seckill/s1/buy", strings.NewReader(c.body))
		r.ContentLength = c.length
		it, err := ReadItem(r)
		if (err == nil) != c.ok || (c.ok && it.Quantity != 2) {
			t.Errorf("%d-byte body (length %d): %+v %v, want ok=%v", len(c.body), c.length, it, err, c.ok)
		}
	}
	r, _ := http.NewRequest(http.MethodPost, "/seckill/s1/buy", nil)
	if it, err := ReadItem(r); err != nil || it != (Item{}) {
		t.Fatalf("no body: %+v %v", it, err)
	}
}

// FuzzBuyBody: no body makes the parser panic, and whatever it accepts is an item the
// decision core accepts too (a valid variant id or none, a quantity 0 or 1..MaxQuantity).
func FuzzBuyBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"variant":"red","quantity":2}`, `{"quantity":1e2}`, `{"variant":"\u00e9"}`,
		`{"variant":"red"}{"variant":"blue"}`, `{"Variant":"red","QUANTITY":3}`, "\xff{", `{"quantity":-0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		it, err := ParseItem(b)
		if err != nil {
			if it != (Item{}) {
				t.Fatalf("a refused body returned %+v", it)
			}
			return
		}
		if v := CheckItem(it); v.Outcome != "" {
			t.Fatalf("ParseItem(%q) accepted %+v, which the core refuses (%s)", b, it, v.Reason)
		}
		if it.Variant != "" && !contract.ValidVariantID(it.Variant) {
			t.Fatalf("ParseItem(%q) accepted variant %q", b, it.Variant)
		}
		if len(b) > MaxBodyBytes {
			t.Fatalf("ParseItem accepted %d bytes", len(b))
		}
	})
}
