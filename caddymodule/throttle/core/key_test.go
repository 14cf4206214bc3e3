package core

import (
	"strings"
	"testing"
)

// FuzzClientKey: whatever a client sends as its address (or a header the key reads), the key
// that goes into a Redis key name never breaks the hash tag, never holds a space or a line
// break, and never grows past MaxPlainKey.
func FuzzClientKey(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "2001:db8::1", "::ffff:1.2.3.4", "fe80::1%eth0", "}{", "", "user-1"} {
		f.Add(s, 24, 64)
	}
	f.Fuzz(func(t *testing.T, raw string, v4, v6 int) {
		k := SafeKey(MaskIP(raw, v4%40, v6%140))
		if strings.ContainsAny(k, "{} \n") || len(k) > MaxPlainKey {
			t.Fatalf("unsafe key %q from %q", k, raw)
		}
	})
}
