package core

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
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
		// Around the object, only JSON's own whitespace (space, tab, CR, LF): a form feed, a
		// vertical tab or a no-break space is not, and encoding/json refuses it too.
		"\f{}", "\v{}", "\u00a0{}", "{}\f", "\f", "\u0085",
	}
	for _, in := range bad {
		if got, err := ParseItem([]byte(in)); err == nil {
			t.Errorf("ParseItem(%q) = %+v, want refused", in, got)
		}
	}
}

// A buy body names each field once, spelled as the contract spells it: encoding/json would keep
// the last of two "quantity" keys and take "Quantity" for "quantity".
func TestABuyBodyWithARepeatedOrMiscasedKeyIsRefused(t *testing.T) {
	for _, in := range []string{
		`{"quantity":1,"quantity":5}`, `{"variant":"red","variant":"blue"}`, `{"variant":"red","\u0076ariant":"blue"}`,
		`{"Quantity":2}`, `{"QUANTITY":2}`, `{"Variant":"red"}`, `{"variant":"red","Variant":"blue"}`,
		"{\"quantity\":1,\"quantit\u0079\":2}", "{\"variant\":\"red\",\"quantity\":1,\"quantity\":1}",
		`{"QuAnTiTy":2}`,
	} {
		if got, err := ParseItem([]byte(in)); err == nil {
			t.Errorf("ParseItem(%s) = %+v, want refused", in, got)
		}
	}
	if got, err := ParseItem([]byte(`{"variant":"red","quantity":2}`)); err != nil || got != (Item{Variant: "red", Quantity: 2}) {
		t.Fatalf("the contract's body: %+v %v", got, err)
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
// decision core accepts too (a valid variant id or none, a quantity 0 or 1..MaxQuantity),
// read from an object whose keys are "variant" and "quantity", each at most once, as spelled,
// and which encoding/json reads as the same item.
func FuzzBuyBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"variant":"red","quantity":2}`, `{"quantity":1e2}`, `{"variant":"\u00e9"}`,
		`{"variant":"red"}{"variant":"blue"}`, `{"Variant":"red","QUANTITY":3}`, "\xff{", `{"quantity":-0}`,
		`{"quantity":1,"quantity":2}`, `{"variant":"a","\u0076ariant":"b"}`, `{"variant":null,"variant":"a"}`} {
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
		if keys, ok := topLevelKeys(b); !ok {
			t.Fatalf("ParseItem(%q) accepted %+v from a body that is not one object", b, it)
		} else if len(keys) > 2 || len(keys) == 2 && keys[0] == keys[1] ||
			slices.ContainsFunc(keys, func(k string) bool { return k != "variant" && k != "quantity" }) {
			t.Fatalf("ParseItem(%q) accepted %+v from keys %q", b, it, keys)
		}
		var loose struct {
			Variant  string `json:"variant"`
			Quantity int    `json:"quantity"`
		}
		if len(bytes.TrimSpace(b)) > 0 && (json.Unmarshal(b, &loose) != nil || loose.Variant != it.Variant || loose.Quantity != it.Quantity) {
			t.Fatalf("ParseItem(%q) = %+v, encoding/json reads %+v", b, it, loose)
		}
	})
}

// topLevelKeys lists the keys of b's one top-level object as a json.Decoder reads them (none for
// an empty body); ok is false for anything else.
func topLevelKeys(b []byte) (keys []string, ok bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	return keys, true
}
