package contract

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestVerifyWebhookAcceptsTheSignedBodyAndRefusesTamperingWrongSecretAndOldTimestamps(t *testing.T) {
	body := []byte(`{"id":"e1","type":"order.paid","order_id":"o1","sale_id":"s1","variant":"","quantity":1,"user_id":"u1","at":"2026-11-30T10:00:00Z"}`)
	now := time.Unix(1_780_000_000, 0)
	header := SignWebhook([]string{"new-secret-0123456789", "old-secret-0123456789"}, now, body)
	if !strings.HasPrefix(header, "t=1780000000,v1=") || strings.Count(header, "v1=") != 2 {
		t.Fatalf("header %q", header)
	}
	for _, secret := range []string{"new-secret-0123456789", "old-secret-0123456789"} {
		if err := VerifyWebhook(secret, header, body, time.Minute, now.Add(30*time.Second)); err != nil {
			t.Fatalf("%s: %v", secret, err)
		}
	}
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-3] = '1'
	for _, tc := range []struct {
		name, secret, header string
		body                 []byte
		now                  time.Time
		want                 error
	}{
		{"tampered body", "new-secret-0123456789", header, tampered, now, ErrSignatureMismatch},
		{"wrong secret", "other-secret-0123456789", header, body, now, ErrSignatureMismatch},
		{"old timestamp", "new-secret-0123456789", header, body, now.Add(6 * time.Minute), ErrSignatureTimestamp},
		{"future timestamp", "new-secret-0123456789", header, body, now.Add(-6 * time.Minute), ErrSignatureTimestamp},
		{"no header", "new-secret-0123456789", "", body, now, ErrSignatureHeader},
		{"no v1", "new-secret-0123456789", "t=1780000000", body, now, ErrSignatureHeader},
		{"t twice", "new-secret-0123456789", "t=1780000000,t=1780000000," + header[len("t=1780000000,"):], body, now, ErrSignatureHeader},
		{"short mac", "new-secret-0123456789", "t=1780000000,v1=abcd", body, now, ErrSignatureHeader},
		{"signed t moved", "new-secret-0123456789", strings.Replace(header, "t=1780000000", "t=1780000001", 1), body, now, ErrSignatureMismatch},
	} {
		if err := VerifyWebhook(tc.secret, tc.header, tc.body, 5*time.Minute, tc.now); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Unknown schemes next to v1 are ignored, so a sender may add one.
	if err := VerifyWebhook("new-secret-0123456789", header+",v2=zz", body, time.Minute, now); err != nil {
		t.Fatalf("with an unknown scheme: %v", err)
	}
}

// The signature header comes from the network: no value may panic the parser, and whatever it
// accepts has a timestamp and at most maxSignatures 32-byte MACs.
func FuzzParseSignature(f *testing.F) {
	f.Add("t=1780000000,v1=" + strings.Repeat("ab", 32))
	f.Add("t=1,v1=" + strings.Repeat("0", 64) + ",v1=" + strings.Repeat("f", 64))
	f.Add("t=,v1=")
	f.Add("v1=xyz,t=-1")
	f.Add(",,,=")
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := ParseSignature(header)
		if err != nil {
			return
		}
		if sig.Timestamp < 0 || len(sig.V1) == 0 || len(sig.V1) > maxSignatures {
			t.Fatalf("accepted %q as %+v", header, sig)
		}
		for _, m := range sig.V1 {
			if len(m) != 32 {
				t.Fatalf("accepted a %d-byte MAC from %q", len(m), header)
			}
		}
		_ = VerifyWebhook("secret-0123456789", header, []byte("{}"), time.Minute, time.Unix(sig.Timestamp, 0))
	})
}

// An empty secret is a receiver's misconfiguration (an unset variable), not a key: anyone can
// compute an HMAC under it, so nothing it "verifies" may pass.
func TestVerifyWebhookRefusesAnEmptySecret(t *testing.T) {
	body := []byte(`{"id":"e1"}`)
	now := time.Unix(1_780_000_000, 0)
	// The sender's own header under "": it verifies under "" with the old code.
	header := SignWebhook([]string{""}, now, body)
	if err := VerifyWebhook("", header, body, time.Minute, now); !errors.Is(err, ErrWebhookSecret) {
		t.Fatalf("empty secret: %v, want ErrWebhookSecret", err)
	}
	for _, secrets := range [][]string{nil, {}, {""}, {"good-secret-0123456789", ""}} {
		if err := VerifyWebhookWith(secrets, header, body, now, WebhookVerifyOptions{}); !errors.Is(err, ErrWebhookSecret) {
			t.Errorf("secrets %q: %v, want ErrWebhookSecret", secrets, err)
		}
	}
}

// The event's id is its idempotency key, and it is signed as part of the body: an attacker who
// replays a captured event under a fresh id (to get past the receiver's dedupe) breaks the
// signature.
func TestVerifyWebhookRefusesAnEventWhoseIdempotencyKeyWasChanged(t *testing.T) {
	body := []byte(`{"id":"evt-1","type":"order.paid","order_id":"o1","sale_id":"s1","variant":"","quantity":1,"user_id":"u1","at":"2026-11-30T10:00:00Z"}`)
	now := time.Unix(1_780_000_000, 0)
	header := SignWebhook([]string{"secret-0123456789abcdef"}, now, body)
	if err := VerifyWebhook("secret-0123456789abcdef", header, body, 0, now); err != nil {
		t.Fatalf("the signed event: %v", err)
	}
	changed := []byte(strings.Replace(string(body), `"id":"evt-1"`, `"id":"evt-2"`, 1))
	if err := VerifyWebhook("secret-0123456789abcdef", header, changed, 0, now); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("a changed id: %v, want ErrSignatureMismatch", err)
	}
}

// A signature from the future is a sender's clock far ahead or a forged time: it is refused
// past MaxFuture (default one minute), well inside the tolerance for age.
func TestVerifyWebhookRefusesATimestampTooFarInTheFuture(t *testing.T) {
	body := []byte(`{"id":"e1"}`)
	now := time.Unix(1_780_000_000, 0)
	sign := func(at time.Time) string { return SignWebhook([]string{"secret-0123456789abcdef"}, at, body) }
	for _, tc := range []struct {
		name   string
		signed time.Time
		opts   WebhookVerifyOptions
		want   error
	}{
		{"30s ahead (clock skew)", now.Add(30 * time.Second), WebhookVerifyOptions{}, nil},
		{"2 minutes ahead", now.Add(2 * time.Minute), WebhookVerifyOptions{}, ErrSignatureTimestamp},
		{"4 minutes old", now.Add(-4 * time.Minute), WebhookVerifyOptions{}, nil},
		{"6 minutes old", now.Add(-6 * time.Minute), WebhookVerifyOptions{}, ErrSignatureTimestamp},
		{"2 minutes ahead, MaxFuture 3m", now.Add(2 * time.Minute), WebhookVerifyOptions{MaxFuture: 3 * time.Minute}, nil},
		{"20s old, tolerance 10s", now.Add(-20 * time.Second), WebhookVerifyOptions{Tolerance: 10 * time.Second}, ErrSignatureTimestamp},
		// MaxFuture never exceeds the tolerance.
		{"20s ahead, tolerance 10s", now.Add(20 * time.Second), WebhookVerifyOptions{Tolerance: 10 * time.Second}, ErrSignatureTimestamp},
	} {
		err := VerifyWebhookWith([]string{"secret-0123456789abcdef"}, sign(tc.signed), body, now, tc.opts)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The compatible form applies the same bound.
	if err := VerifyWebhook("secret-0123456789abcdef", sign(now.Add(2*time.Minute)), body, 5*time.Minute, now); !errors.Is(err, ErrSignatureTimestamp) {
		t.Fatalf("VerifyWebhook, 2 minutes ahead: %v", err)
	}
}

// A receiver mid-rotation may hold both secrets: either one matching is enough.
func TestVerifyWebhookWithAcceptsAnyOfTheReceiversSecrets(t *testing.T) {
	body := []byte(`{"id":"e1"}`)
	now := time.Unix(1_780_000_000, 0)
	header := SignWebhook([]string{"old-secret-0123456789"}, now, body)
	if err := VerifyWebhookWith([]string{"new-secret-0123456789", "old-secret-0123456789"}, header, body, now, WebhookVerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := VerifyWebhookWith([]string{"new-secret-0123456789"}, header, body, now, WebhookVerifyOptions{}); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("only the new secret: %v", err)
	}
}
