package weaksecret

import (
	"errors"
	"strings"
	"testing"
)

func TestWeakSecretsAreRefusedAndRandomOnesPass(t *testing.T) {
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"64 random hex (run.sh's token key)", "3f9c1e0b7a52d4e86c0f1a9b2e7d5c3046a8b1f9e2d7c0a5b3f6e1d8c9a4b7e2", true},
		{"48 random hex (run.sh's admin token)", "9b1e4c7a0d3f6285e1c9b4a7d0f3e6c2a5b8d1e4f7a0c3b6", true},
		{"32 bytes, varied", "k7Qp-2vX9_mZr4Lw8Ty1Hs6Nd3Bf0Gj5", true},
		{"31 bytes", "k7Qp-2vX9_mZr4Lw8Ty1Hs6Nd3Bf0Gj", false},
		{"empty", "", false},
		{"all zeros", strings.Repeat("0", 64), false},
		{"one letter repeated", strings.Repeat("a", 40), false},
		{"hex zeros with dashes", "00000000-0000-0000-0000-000000000000", false},
		{"seven distinct bytes", strings.Repeat("abcdefg", 4) + "abcdef", false},
		{"a short unit repeated", strings.Repeat("abcdefgh", 4), false},
		{"a placeholder", "please-change-me-before-production-42", false},
		{"the demo key", DemoTokenKey, false},
		{"the demo key upper case", strings.ToUpper(DemoTokenKey), false},
		{"the demo key with spaces", "  " + DemoTokenKey + "\t", false},
		{"the demo admin token", "demo-admin-token", false},
		{"the compose dummy key", "compose-check-dummy-not-a-secret-0123456789", false},
		{"a strong value with spaces around", " 3f9c1e0b7a52d4e86c0f1a9b2e7d5c3046a8b1f9 ", false},
		{"30 bytes padded to 32 with spaces", " 3f9c1e0b7a52d4e86c0f1a9b2e7d5c ", false},
	}
	for _, c := range cases {
		err := Check(c.value)
		if (err == nil) != c.ok {
			t.Errorf("%s: Check = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrWeak) {
			t.Errorf("%s: %v does not wrap ErrWeak", c.name, err)
		}
		if err != nil && len(c.value) > 8 && strings.Contains(err.Error(), strings.TrimSpace(c.value)) {
			t.Errorf("%s: the error %q shows the secret", c.name, err)
		}
	}
}

func TestPublishedValuesAreKnownInAnyCaseAndSpacing(t *testing.T) {
	for _, v := range []string{DemoTokenKey, " DEMO-ADMIN-TOKEN ", "Demo-Token-Key"} {
		if !IsPublished(v) || !errors.Is(Check(v), ErrPublished) {
			t.Errorf("%q: not recognised as published", v)
		}
	}
	if IsPublished("3f9c1e0b7a52d4e86c0f1a9b2e7d5c3046a8b1f9e2d7c0a5b3f6e1d8c9a4b7e2") {
		t.Error("a random value is called published")
	}
}
