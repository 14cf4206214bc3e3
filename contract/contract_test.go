package contract

import (
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
