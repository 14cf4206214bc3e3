package throttle

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

func TestBlocklistRefusesUntilTheRetryTimeAndNotAfter(t *testing.T) {
	b := NewBlocklist(0)
	b.Add("k", Block{Until: t0.Add(2 * time.Second)}, t0)
	if _, ok := b.Lookup("k", t0.Add(1999*time.Millisecond)); !ok {
		t.Fatal("key must be blocked before its retry time")
	}
	if _, ok := b.Lookup("k", t0.Add(2*time.Second)); ok {
		t.Fatal("key must be free at its retry time")
	}
	if b.Len() != 0 {
		t.Fatal("an expired entry found by Lookup must be removed")
	}
	if _, ok := b.Lookup("other", t0); ok {
		t.Fatal("unknown key blocked")
	}
}

func TestBlocklistKeepsTheLaterRetryTime(t *testing.T) {
	b := NewBlocklist(0)
	b.Add("k", Block{Until: t0.Add(10 * time.Second), Banned: true}, t0)
	b.Add("k", Block{Until: t0.Add(1 * time.Second)}, t0) // an older answer arriving late
	e, ok := b.Lookup("k", t0.Add(5*time.Second))
	if !ok || !e.Banned {
		t.Fatalf("a shorter, later-arriving refusal must not cut a ban short: %+v %v", e, ok)
	}
	b.Add("k", Block{Until: t0}, t0)
	if _, ok := b.Lookup("k", t0.Add(5*time.Second)); !ok {
		t.Fatal("an already expired entry must not replace a live one")
	}
}

func TestBlocklistStaysBoundedUnderManyKeys(t *testing.T) {
	b := NewBlocklist(blocklistShards * 10)
	for i := 0; i < 10_000; i++ {
		b.Add(strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String(), Block{Until: t0.Add(time.Minute)}, t0)
	}
	if n := b.Len(); n > blocklistShards*10 {
		t.Fatalf("blocklist holds %d entries, bound is %d", n, blocklistShards*10)
	}
	// Once the entries expired, new keys find room again.
	later := t0.Add(2 * time.Minute)
	b.Add("fresh", Block{Until: later.Add(time.Second)}, later)
	if _, ok := b.Lookup("fresh", later); !ok {
		t.Fatal("a full blocklist must sweep expired entries to make room")
	}
}

func TestShieldHoldsAdmittedPlusInFlightAndRefundsRefusals(t *testing.T) {
	s := NewShield(3, time.Hour, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := s.Take("k", t0); !ok {
			t.Fatalf("take %d refused under the limit", i)
		}
	}
	if ok, reset := s.Take("k", t0); ok || reset.IsZero() {
		t.Fatalf("fourth in-flight request must be refused with a reset time, got ok=%v reset=%v", ok, reset)
	}
	// The refused take was undone: refunding one request (Redis refused it) frees exactly one.
	s.Refund("k")
	if ok, _ := s.Take("k", t0); !ok {
		t.Fatal("a refunded slot must be usable again")
	}
	if ok, _ := s.Take("k", t0); ok {
		t.Fatal("refusals must not leak slots: only one was refunded")
	}
	if ok, _ := s.Take("other", t0); !ok {
		t.Fatal("keys are independent")
	}
}

func TestZonesAreOrderedTightestFirst(t *testing.T) {
	rules := []Rule{
		{Name: "ip", Limit: 100, Window: time.Minute},    // 1.67/s
		{Name: "user", Limit: 5, Window: time.Second},    // 5/s
		{Name: "device", Limit: 10, Window: time.Minute}, // 0.17/s
		{Name: "burst", Limit: 1, Window: time.Second},   // 1/s
		{Name: "user2", Limit: 50, Window: 10 * time.Second},
	}
	SortTightestFirst(rules)
	var got []string
	for _, r := range rules {
		got = append(got, r.Name)
	}
	want := "device burst ip user user2" // user and user2 tie at 5/s: the shorter window first
	if strings.Join(got, " ") != want {
		t.Fatalf("order = %v, want %s", got, want)
	}
}

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

func FuzzClientKey(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "2001:db8::1", "::ffff:1.2.3.4", "fe80::1%eth0", "}{", "", "user-1"} {
		f.Add(s, 24, 64)
	}
	f.Fuzz(func(t *testing.T, raw string, v4, v6 int) {
		k := SafeKey(MaskIP(raw, v4%40, v6%140))
		if strings.ContainsAny(k, "{} \n") || len(k) > maxPlainKey {
			t.Fatalf("unsafe key %q from %q", k, raw)
		}
	})
}

func TestBlocklistProbeAnswersReplaceTheProvisionalEntry(t *testing.T) {
	b := NewBlocklist(0)
	if !b.TryAdd("k", Block{Until: t0.Add(5 * time.Second)}, t0) {
		t.Fatal("the first refusal of an episode must win the probe")
	}
	if b.TryAdd("k", Block{Until: t0.Add(5 * time.Second)}, t0) {
		t.Fatal("a concurrent refusal must not probe too")
	}
	b.Set("k", Block{Until: t0.Add(time.Second)}, t0) // Redis: a slot frees in 1s
	if _, ok := b.Lookup("k", t0.Add(1500*time.Millisecond)); ok {
		t.Fatal("Redis's shorter retry time must replace the provisional one")
	}
	b.TryAdd("k", Block{Until: t0.Add(5 * time.Second)}, t0)
	b.Remove("k") // Redis admitted the probe
	if _, ok := b.Lookup("k", t0); ok {
		t.Fatal("an admitted probe must clear the entry")
	}
}
