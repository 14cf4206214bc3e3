package tokenformat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func ring(t *testing.T, keys ...Key) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var (
	k1 = Key{ID: "k1", Secret: []byte(strings.Repeat("a", 32))}
	k2 = Key{ID: "k2", Secret: []byte(strings.Repeat("b", 32))}
)

func TestATokenVerifiesOnlyForItsSaleUserAndLifetime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	kr := ring(t, k1)
	tok, c, err := kr.Issue("sale1", "alice", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := kr.Verify(tok, "sale1", "alice", now)
	if err != nil || got.Nonce != c.Nonce || got.KeyID != "k1" {
		t.Fatalf("valid token refused: %v %+v", err, got)
	}
	cases := map[string]struct {
		tok, sale, user string
		at              time.Time
		want            error
	}{
		"other user":   {tok, "sale1", "bob", now, ErrInvalid},
		"other sale":   {tok, "sale2", "alice", now, ErrInvalid},
		"expired":      {tok, "sale1", "alice", now.Add(time.Minute), ErrExpired},
		"truncated":    {tok[:len(tok)-1], "sale1", "alice", now, ErrInvalid},
		"empty":        {"", "sale1", "alice", now, ErrInvalid},
		"flipped byte": {flip(tok, len(tok)-5), "sale1", "alice", now, ErrInvalid},
		"flipped exp":  {strings.Replace(tok, "."+strings.Split(tok, ".")[2]+".", ".zzzzzz.", 1), "sale1", "alice", now, ErrInvalid},
		"version 2":    {"2" + tok[1:], "sale1", "alice", now, ErrInvalid},
	}
	for name, tc := range cases {
		if _, err := kr.Verify(tc.tok, tc.sale, tc.user, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
}

func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestKeyRotationKeepsOldTokensUntilTheKeyIsRemoved(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old, _, _ := ring(t, k1).Issue("s", "u", now.Add(time.Hour))
	rotated := ring(t, k2, k1) // k2 signs, k1 still verifies
	if _, err := rotated.Verify(old, "s", "u", now); err != nil {
		t.Fatalf("token of the previous key refused during rotation: %v", err)
	}
	fresh, c, _ := rotated.Issue("s", "u", now.Add(time.Hour))
	if c.KeyID != "k2" {
		t.Fatalf("new tokens must be signed with the first key, got %s", c.KeyID)
	}
	retired := ring(t, k2)
	if _, err := retired.Verify(old, "s", "u", now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("token of a retired key: got %v, want ErrInvalid", err)
	}
	if _, err := retired.Verify(fresh, "s", "u", now); err != nil {
		t.Fatal(err)
	}
}

func TestKeyringRefusesWeakOrDuplicateKeys(t *testing.T) {
	for _, keys := range [][]Key{nil, {{ID: "k", Secret: []byte("short")}}, {k1, k1}, {{ID: "bad id", Secret: k1.Secret}}} {
		if _, err := NewKeyring(keys...); err == nil {
			t.Errorf("NewKeyring(%v) accepted", keys)
		}
	}
}

func FuzzVerifyNeverPanicsAndNeverAcceptsForgeries(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	// A key of its own and a fixed nonce: every fuzz worker process knows the same single
	// issued token, and no token cached by an earlier version of this target (random nonces,
	// the k1 secret) is valid here.
	kr, _ := NewKeyring(Key{ID: "k1", Secret: []byte("fuzz-verify-key-0123456789-0123456789")})
	tok, _, _ := kr.Sign("s", "u", "AAAAAAAAAAAAAAAAAAAAAA", now.Add(time.Hour))
	f.Add(tok, "s", "u")
	f.Add("1.k1.abc.def.ghi", "s", "u")
	f.Add("", "", "")
	f.Add(strings.Repeat(".", 200), "s", "u")
	f.Fuzz(func(t *testing.T, token, sale, user string) {
		_, err := kr.Verify(token, sale, user, now)
		if err == nil && !(token == tok && sale == "s" && user == "u") {
			t.Fatalf("accepted a token that was never issued: %q for %q/%q", token, sale, user)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	kr, _ := NewKeyring(k2, k1)
	tok, _, _ := kr.Issue("sale-2026", "user-123456", now.Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.Verify(tok, "sale-2026", "user-123456", now); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTheMACIsStandardHMACSHA256(t *testing.T) {
	long := Key{ID: "long", Secret: []byte(strings.Repeat("x", 100))} // longer than a block: hashed first
	for _, key := range []Key{k1, long} {
		kr := ring(t, key)
		tok, _, err := kr.Issue("sale-1", "user_1", time.Unix(1_800_000_000, 0))
		if err != nil {
			t.Fatal(err)
		}
		p := strings.Split(tok, ".")
		m := hmac.New(sha256.New, key.Secret)
		m.Write([]byte("seckill-token\x00" + Version + "\x00" + p[1] + "\x00sale-1\x00user_1\x00" + p[3] + "\x00" + p[2]))
		if want := base64.RawURLEncoding.EncodeToString(m.Sum(nil)); p[4] != want {
			t.Fatalf("key %s: mac %s, crypto/hmac says %s", key.ID, p[4], want)
		}
	}
}

func TestSignBindsTheCallersNonceAndStoreValueMatchesVerify(t *testing.T) {
	kr := ring(t, k1)
	nonce, err := NewNonce()
	if err != nil || len(nonce) != NonceLen {
		t.Fatalf("nonce %q, %v", nonce, err)
	}
	exp := time.UnixMilli(1_800_000_123_456)
	tok, c, err := kr.Sign("s", "u", nonce, exp)
	if err != nil {
		t.Fatal(err)
	}
	if c.Nonce != nonce || !c.Expires.Equal(time.Unix(1_800_000_123, 0)) {
		t.Fatalf("claims %+v: the nonce is kept and the expiry rounded down to the second", c)
	}
	got, err := kr.Verify(tok, "s", "u", exp.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if StoreValue(got) != nonce+":1800000123000" || StoreValue(got) != StoreValue(c) {
		t.Fatalf("store value %q", StoreValue(got))
	}
	if len(tok) > MaxLen {
		t.Fatalf("token longer than MaxLen: %d", len(tok))
	}
	for _, bad := range []struct{ sale, user, nonce string }{
		{"s", "u", "short"}, {"s", "u", strings.Repeat(".", NonceLen)}, {"", "u", nonce}, {"s", "a:b", nonce},
	} {
		if _, _, err := kr.Sign(bad.sale, bad.user, bad.nonce, exp); err == nil {
			t.Errorf("Sign(%q, %q, %q) accepted", bad.sale, bad.user, bad.nonce)
		}
	}
}

func TestNoncesDoNotRepeat(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		n, err := NewNonce()
		if err != nil {
			t.Fatal(err)
		}
		if seen[n] {
			t.Fatalf("nonce %s drawn twice", n)
		}
		seen[n] = true
	}
}

func TestVerifyRefusesEveryTamperingWithItsCode(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	kr := ring(t, k2, k1)
	tok, _, _ := kr.Issue("saleX", "userA", now.Add(time.Minute))
	byK1, _, _ := ring(t, k1).Issue("saleX", "userA", now.Add(time.Minute))
	forged, _, _ := ring(t, Key{ID: "k2", Secret: []byte(strings.Repeat("z", 32))}).Issue("saleX", "userA", now.Add(time.Minute))
	p := strings.Split(tok, ".")
	cases := []struct {
		name, tok, sale, user string
		at                    time.Time
		want                  error
	}{
		{"forged signature (same kid, other secret)", forged, "saleX", "userA", now, ErrInvalid},
		{"user A's token sent by user B", tok, "saleX", "userB", now, ErrInvalid},
		{"sale X's token sent to sale Y", tok, "saleY", "userA", now, ErrInvalid},
		{"expired", tok, "saleX", "userA", now.Add(time.Minute), ErrExpired},
		{"expired long ago", tok, "saleX", "userA", now.Add(24 * time.Hour), ErrExpired},
		{"unknown key id", strings.Replace(tok, ".k2.", ".k9.", 1), "saleX", "userA", now, ErrInvalid},
		{"kid swapped to another configured key", strings.Replace(tok, ".k2.", ".k1.", 1), "saleX", "userA", now, ErrInvalid},
		{"nonce changed", strings.Join([]string{p[0], p[1], p[2], flip(p[3], 0), p[4]}, "."), "saleX", "userA", now, ErrInvalid},
		{"exp extended", strings.Join([]string{p[0], p[1], "zzzzzz", p[3], p[4]}, "."), "saleX", "userA", now, ErrInvalid},
		{"mac truncated", tok[:len(tok)-3], "saleX", "userA", now, ErrInvalid},
		{"mac extended", tok + "A", "saleX", "userA", now, ErrInvalid},
		{"extra part", tok + ".x", "saleX", "userA", now, ErrInvalid},
		{"missing parts", strings.Join(p[:4], "."), "saleX", "userA", now, ErrInvalid},
		{"padded mac", tok + "=", "saleX", "userA", now, ErrInvalid},
		{"invalid sale id", tok, "sale X", "userA", now, ErrInvalid},
		{"huge token", strings.Repeat("1", 10000), "saleX", "userA", now, ErrInvalid},
	}
	for _, tc := range cases {
		if _, err := kr.Verify(tc.tok, tc.sale, tc.user, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// Every single-byte change anywhere in the token is refused.
	for i := range len(tok) {
		for _, c := range []byte{'A', '0', '.', '-', 0} {
			if tok[i] == c {
				continue
			}
			b := []byte(tok)
			b[i] = c
			if _, err := kr.Verify(string(b), "saleX", "userA", now); err == nil {
				t.Fatalf("byte %d changed to %q: accepted", i, c)
			}
		}
	}
	if _, err := kr.Verify(byK1, "saleX", "userA", now); err != nil {
		t.Fatalf("token of a configured older key: %v", err)
	}
	if _, err := ring(t, k2).Verify(byK1, "saleX", "userA", now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("token of a retired key: %v", err)
	}
}

func TestVerifyAllocatesNothing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	kr := ring(t, k2, k1)
	tok, _, _ := kr.Issue("sale-2026", "user-123456", now.Add(time.Hour))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := kr.Verify(tok, "sale-2026", "user-123456", now); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Verify allocates %.0f times per call; it runs on every purchase", allocs)
	}
}

// verifySplitHMAC is the first version of Verify (strings.Split, hmac.New, a MAC string per
// call), kept as the baseline BenchmarkVerify is compared with in BENCHMARKS.md.
func verifySplitHMAC(secret []byte, token, sale, user string, now time.Time) error {
	parts := strings.Split(token, ".")
	if len(parts) != 5 || parts[0] != Version {
		return ErrInvalid
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("seckill-token\x00" + Version + "\x00" + parts[1] + "\x00" + sale + "\x00" + user + "\x00" + parts[3] + "\x00" + parts[2]))
	if !hmac.Equal([]byte(parts[4]), []byte(base64.RawURLEncoding.EncodeToString(m.Sum(nil)))) {
		return ErrInvalid
	}
	exp, err := strconv.ParseInt(parts[2], 36, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return ErrExpired
	}
	return nil
}

func BenchmarkVerifyBaselineSplitHMAC(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	kr, _ := NewKeyring(k2, k1)
	tok, _, _ := kr.Issue("sale-2026", "user-123456", now.Add(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if err := verifySplitHMAC(k2.Secret, tok, "sale-2026", "user-123456", now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIssue(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	kr, _ := NewKeyring(k2, k1)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := kr.Issue("sale-2026", "user-123456", now.Add(time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzSignedTokensVerifyOnlyForTheirOwnClaims signs arbitrary claims and checks that the
// token verifies for exactly them: never for another sale or user, never after one byte
// changes, never after its expiry.
func FuzzSignedTokensVerifyOnlyForTheirOwnClaims(f *testing.F) {
	kr, _ := NewKeyring(k2, k1)
	f.Add("sale-1", "alice", int64(1_800_000_000), 0, byte('A'))
	f.Add("s", "u", int64(1), 60, byte('.'))
	f.Add("a", "b", int64(1<<62), 5, byte('z'))
	f.Add("saleX", "userA", int64(-1), 3, byte(0))
	f.Fuzz(func(t *testing.T, sale, user string, exp int64, pos int, b byte) {
		nonce, _ := NewNonce()
		tok, c, err := kr.Sign(sale, user, nonce, time.Unix(exp, 0))
		if err != nil {
			return // invalid ids or expiry: nothing signed
		}
		before := c.Expires.Add(-time.Second)
		if _, err := kr.Verify(tok, sale, user, before); err != nil {
			t.Fatalf("own token refused: %v (%q)", err, tok)
		}
		if _, err := kr.Verify(tok, sale, user, c.Expires); !errors.Is(err, ErrExpired) {
			t.Fatalf("at expiry: %v", err)
		}
		if _, err := kr.Verify(tok, sale+"x", user, before); err == nil && len(sale) < 64 {
			t.Fatal("verified for another sale")
		}
		if _, err := kr.Verify(tok, sale, user+"x", before); err == nil && len(user) < 64 {
			t.Fatal("verified for another user")
		}
		if pos < 0 {
			pos = -pos
		}
		mut := []byte(tok)
		if i := pos % len(mut); mut[i] != b {
			mut[i] = b
			if _, err := kr.Verify(string(mut), sale, user, before); err == nil {
				t.Fatalf("byte %d of %q changed to %q: accepted", i, tok, b)
			}
		}
	})
}

func TestABoundTokenVerifiesOnlyWithItsThumbprint(t *testing.T) {
	kr, err := NewKeyring(Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	const jkt = "cn-I_WNMClehiVp51i_0VpOENW1upEerA8sEam5hn-s"
	const other = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
	now := time.Now()
	tok, c, err := kr.SignBound("s1", "u1", mustNonce(t), now.Add(time.Minute), jkt)
	if err != nil {
		t.Fatal(err)
	}
	if !Bound(tok) || !strings.HasPrefix(tok, BoundVersion+".") || len(tok) > MaxLen {
		t.Fatalf("bound token %q", tok)
	}
	if got, err := kr.VerifyBound(tok, "s1", "u1", jkt, now); err != nil || got != c {
		t.Fatalf("with its key: %+v, %v", got, err)
	}
	for name, j := range map[string]string{"another key": other, "no key (a bearer token)": ""} {
		if _, err := kr.VerifyBound(tok, "s1", "u1", j, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := kr.Verify(tok, "s1", "u1", now); !errors.Is(err, ErrInvalid) {
		t.Errorf("Verify of a bound token: %v, want ErrInvalid", err)
	}
	// Changing the version alone makes a bearer token of the same MAC: refused, the domains
	// differ.
	if _, err := kr.Verify(Version+tok[1:], "s1", "u1", now); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bound token relabelled as a bearer one: %v, want ErrInvalid", err)
	}
	bearer, _, _ := kr.Sign("s1", "u1", mustNonce(t), now.Add(time.Minute))
	if Bound(bearer) {
		t.Fatal("a bearer token claims to be bound")
	}
	if _, err := kr.VerifyBound(bearer, "s1", "u1", jkt, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bearer token with a key: %v, want ErrInvalid", err)
	}
	if _, _, err := kr.SignBound("s1", "u1", mustNonce(t), now.Add(time.Minute), "short"); err == nil {
		t.Error("SignBound accepted a thumbprint that is not 43 base64url characters")
	}
}

func mustNonce(t *testing.T) string {
	t.Helper()
	n, err := NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
