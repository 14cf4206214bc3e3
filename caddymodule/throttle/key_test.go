package throttle

import (
	"strings"
	"testing"
)

func TestIPKeysAreBucketedByPrefix(t *testing.T) {
	cases := []struct {
		ip     string
		v4, v6 int
		want   string
	}{
		{"203.0.113.77", 32, 64, "203.0.113.77"},
		{"203.0.113.77", 24, 64, "203.0.113.0/24"},
		{"2001:db8:1:2:3:4:5:6", 32, 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", 32, 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 32, 128, "2001:db8:1:2:3:4:5:6"},
		{"::ffff:198.51.100.9", 24, 64, "198.51.100.0/24"},
		{"fe80::1%eth0", 32, 64, "fe80::/64"},
		{"not-an-ip", 24, 64, "not-an-ip"},
		{"", 24, 64, ""},
	}
	for _, c := range cases {
		if got := MaskIP(c.ip, c.v4, c.v6); got != c.want {
			t.Errorf("MaskIP(%q, %d, %d) = %q, want %q", c.ip, c.v4, c.v6, got, c.want)
		}
	}
	// Two hosts of one /64 share a key; two /64s do not.
	if MaskIP("2001:db8::1", 32, 64) != MaskIP("2001:db8::ffff:2", 32, 64) {
		t.Error("hosts of one /64 must share a key")
	}
	if MaskIP("2001:db8:0:1::1", 32, 64) == MaskIP("2001:db8:0:2::1", 32, 64) {
		t.Error("different /64s must not share a key")
	}
}

func TestClientKeysNeverBreakTheHashTagNorGrowRedisKeys(t *testing.T) {
	for _, k := range []string{"user-42", "203.0.113.0/24", "2001:db8::/64", "a@b.c"} {
		if SafeKey(k) != k {
			t.Errorf("plain key %q was rewritten to %q", k, SafeKey(k))
		}
	}
	for _, k := range []string{"x}y", "{evil}", strings.Repeat("a", 65), "sp ace", "é", "a\nb"} {
		got := SafeKey(k)
		if !strings.HasPrefix(got, "h:") || len(got) != 34 || strings.ContainsAny(got, "{}") {
			t.Errorf("SafeKey(%q) = %q, want a digest", k, got)
		}
	}
	if SafeKey("x}y") == SafeKey("x}z") {
		t.Error("different keys must have different digests")
	}
}

func TestKeyTemplatesGetBucketedIPPlaceholders(t *testing.T) {
	out, client, peer := rewriteTemplate("{client_ip}|{http.request.header.X-Device-ID}")
	if !client || peer || out != clientNetPlaceholder+"|{http.request.header.X-Device-ID}" {
		t.Fatalf("rewrite = %q client=%v peer=%v", out, client, peer)
	}
	out, client, peer = rewriteTemplate("{http.vars.client_ip}/{remote_host}")
	if !client || !peer || out != clientNetPlaceholder+"/"+peerNetPlaceholder {
		t.Fatalf("rewrite = %q client=%v peer=%v", out, client, peer)
	}
	if _, client, peer = rewriteTemplate("{http.request.header.X-User-ID}"); client || peer {
		t.Fatal("a user template uses no IP")
	}
}
