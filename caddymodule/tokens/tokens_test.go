package tokens

import (
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
	kr, _ := NewKeyring(k1)
	// The fuzzer runs this function in worker processes, so the one valid token must be the same
	// in all of them: build it with a fixed nonce instead of Issue's random one.
	exp := strconv.FormatInt(now.Add(time.Hour).Unix(), 36)
	nonce := "AAAAAAAAAAAAAAAAAAAAAA"
	tok := Version + ".k1." + exp + "." + nonce + "." + sign(k1.Secret, "k1", "s", "u", nonce, exp)
	if _, err := kr.Verify(tok, "s", "u", now); err != nil {
		f.Fatalf("the seed token must verify: %v", err)
	}
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
