package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestValidIDAcceptsOnlyTheContractAlphabet(t *testing.T) {
	good := []string{"a", "sale-1", "User_42", strings.Repeat("x", 64)}
	bad := []string{"", strings.Repeat("x", 65), "a b", "a/b", "ä", "a{b}", "a:b", "a\x00"}
	for _, s := range good {
		if !ValidID(s) {
			t.Errorf("ValidID(%q) = false, want true", s)
		}
	}
	for _, s := range bad {
		if ValidID(s) {
			t.Errorf("ValidID(%q) = true, want false", s)
		}
	}
}

func TestAllKeysOfASaleShareOneHashTag(t *testing.T) {
	for _, k := range []string{MetaKey("s1"), BuyersKey("s1"), TokensKey("s1"), OutboxKey("s1"), CompensatedKey("s1")} {
		if !strings.Contains(k, "{sale:s1}") || strings.Count(k, "{") != 1 {
			t.Errorf("key %q does not carry exactly the hash tag {sale:s1}", k)
		}
	}
}

func TestDecodeOrderMessageRefusesIncompleteBodies(t *testing.T) {
	ok := `{"order_id":"o1","sale_id":"s1","user_id":"u1","accepted_at":"2026-11-30T20:00:00Z"}`
	m, err := DecodeOrderMessage([]byte(ok))
	if err != nil || m.AcceptedAt != time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC) {
		t.Fatalf("good message refused: %v %+v", err, m)
	}
	for _, body := range []string{`{}`, `not json`, `{"order_id":"o1","sale_id":"bad id","user_id":"u1","accepted_at":"2026-11-30T20:00:00Z"}`,
		`{"order_id":"o1","sale_id":"s1","user_id":"u1"}`} {
		if _, err := DecodeOrderMessage([]byte(body)); err == nil {
			t.Errorf("DecodeOrderMessage(%s) accepted", body)
		}
	}
}

func TestOrderMessageVariantFieldsAreOmittedWhenDefaultAndValidated(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := OrderMessage{OrderID: "o1", SaleID: "s1", UserID: "u1", AcceptedAt: at}
	b, _ := json.Marshal(m)
	if want := `{"order_id":"o1","sale_id":"s1","user_id":"u1","accepted_at":"2026-11-30T12:00:00Z"}`; string(b) != want {
		t.Fatalf("single-stock message %s, want %s", b, want)
	}
	if m.Units() != 1 || m.Seq() != 1 {
		t.Fatalf("defaults: units %d seq %d, want 1 1", m.Units(), m.Seq())
	}
	m.Variant, m.Quantity, m.SeqNo = "red-42", 2, 3
	b, _ = json.Marshal(m)
	got, err := DecodeOrderMessage(b)
	if err != nil || got.Variant != "red-42" || got.Units() != 2 || got.Seq() != 3 {
		t.Fatalf("%s decodes to %+v, %v", b, got, err)
	}
	for name, bad := range map[string]OrderMessage{
		"variant":  {OrderID: "o", SaleID: "s", UserID: "u", AcceptedAt: at, Variant: "a/b"},
		"quantity": {OrderID: "o", SaleID: "s", UserID: "u", AcceptedAt: at, Quantity: MaxQuantity + 1},
		"negative": {OrderID: "o", SaleID: "s", UserID: "u", AcceptedAt: at, Quantity: -1},
		"seq":      {OrderID: "o", SaleID: "s", UserID: "u", AcceptedAt: at, SeqNo: -1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%s: %+v validated", name, bad)
		}
	}
}

func TestVariantTargetsSplit(t *testing.T) {
	cases := []struct {
		in, target, variant string
		ok                  bool
	}{
		{"s1", "s1", "", true},
		{"s1/red", "s1", "red", true},
		{"s1:3/red", "s1:3", "red", true},
		{"s1/", "", "", false},
		{"s1/a/b", "", "", false},
		{"/red", "", "", false},
		{"s 1/red", "", "", false},
	}
	for _, c := range cases {
		target, variant, ok := SplitVariantTarget(c.in)
		if target != c.target || variant != c.variant || ok != c.ok {
			t.Errorf("SplitVariantTarget(%q) = %q %q %v", c.in, target, variant, ok)
		}
	}
	if VariantTarget("s1:3", "red") != "s1:3/red" || HeldKey("s1") != "seckill:{sale:s1}:held" || VariantField("red") != "v:red" {
		t.Fatal("variant names changed")
	}
}
