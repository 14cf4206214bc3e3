package invariants

import "testing"

func TestRoomLogEntriesParseOrAreRefused(t *testing.T) {
	good := map[string]roomEvent{
		"a:1700000000000:3:alice":                  {kind: 'a', ms: 1700000000000, n: 3, user: "alice"},
		"l:1700000000002:7:carol":                  {kind: 'l', ms: 1700000000002, n: 7, user: "carol"},
		"t:1700000000001:1700000120000:bob:AAAA_-": {kind: 't', ms: 1700000000001, n: 1700000120000, user: "bob", nonce: "AAAA_-"},
	}
	for s, want := range good {
		got, ok := parseRoomEvent(s)
		if !ok || got != want {
			t.Errorf("%q: %+v %v, want %+v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "a", "a:1:2", "a:x:2:u", "a:1:y:u", "a:1:2:", "a:1:2:u:extra", "t:1:2:u", "ab:1:2:u", "z:1:2:u", "l:1:2:u:extra", "l:1:2:"} {
		if e, ok := parseRoomEvent(s); ok {
			t.Errorf("%q parsed as %+v", s, e)
		}
	}
}
