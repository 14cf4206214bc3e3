package contract

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The specification's published example (its libraries' READMEs and test suites): a whsec_
// secret, an id, a timestamp and a body, and the signature every implementation must make.
func TestStandardSignatureMatchesTheSpecificationsExample(t *testing.T) {
	h := http.Header{}
	SignStandardWebhook(h, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if got, want := h.Get("webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("webhook-signature %q, want %q", got, want)
	}
	if h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" || h.Get("webhook-timestamp") != "1614265330" {
		t.Errorf("headers %v", h)
	}
}

// What we sign verifies with the specification's Go library, under the "whsec_" form of a
// plain secret and of a whsec_ secret, for each secret of a rotation; a changed body, id or
// timestamp does not. What that library signs verifies with VerifyStandardWebhook.
func TestStandardSignaturesVerifyWithTheSpecificationsGoLibrary(t *testing.T) {
	body := []byte(`{"id":"e1","version":1,"type":"order.paid","order_id":"o1","sale_id":"s1","variant":"","quantity":1,"user_id":"u1","at":"2026-11-30T10:00:00Z"}`)
	plain, std := "hook-secret-new-0123456789", "whsec_c2Vja2lsbC10ZXN0LWtleS0wMTIzNDU2Nzg5YWJjZGVm"
	now := time.Now()
	h := http.Header{}
	SignStandardWebhook(h, []string{plain, std}, "e1", now, body)
	if n := len(strings.Fields(h.Get(StandardSignatureHeader))); n != 2 {
		t.Fatalf("%d signatures for 2 secrets: %q", n, h.Get(StandardSignatureHeader))
	}
	for _, secret := range []string{plain, std} {
		whsec, err := StandardWebhookSecret(secret)
		if err != nil {
			t.Fatal(err)
		}
		lib, err := standardwebhooks.NewWebhook(whsec)
		if err != nil {
			t.Fatal(err)
		}
		if err := lib.Verify(body, h); err != nil {
			t.Errorf("the library refuses our signature under %s: %v", secret, err)
		}
		tampered := append([]byte{}, body...)
		tampered[len(tampered)-3] = '1'
		if lib.Verify(tampered, h) == nil {
			t.Errorf("the library accepts a changed body under %s", secret)
		}
		other := h.Clone()
		other.Set(StandardIDHeader, "e2")
		if lib.Verify(body, other) == nil {
			t.Errorf("the library accepts another id under %s", secret)
		}
		other = h.Clone()
		other.Set(StandardTimestampHeader, "1")
		if lib.Verify(body, other) == nil {
			t.Errorf("the library accepts another timestamp under %s", secret)
		}
		sig, err := lib.Sign("e1", now, body)
		if err != nil {
			t.Fatal(err)
		}
		theirs := http.Header{}
		theirs.Set(StandardIDHeader, "e1")
		theirs.Set(StandardTimestampHeader, h.Get(StandardTimestampHeader))
		theirs.Set(StandardSignatureHeader, sig)
		if err := VerifyStandardWebhook([]string{secret}, theirs, body, now, WebhookVerifyOptions{}); err != nil {
			t.Errorf("VerifyStandardWebhook refuses the library's signature under %s: %v", secret, err)
		}
		// Seckill-Signature uses the same key.
		if err := VerifyWebhook(secret, SignWebhook([]string{secret}, now, body), body, 0, now); err != nil {
			t.Errorf("Seckill-Signature under %s: %v", secret, err)
		}
	}
}

func TestVerifyStandardWebhookRefusesWhatItMust(t *testing.T) {
	body := []byte(`{"id":"e1"}`)
	secret := "hook-secret-old-0123456789"
	now := time.Unix(1_800_000_000, 0)
	signed := func(at time.Time, secrets ...string) http.Header {
		h := http.Header{}
		SignStandardWebhook(h, secrets, "e1", at, body)
		return h
	}
	if err := VerifyStandardWebhook([]string{"hook-secret-new-0123456789", secret}, signed(now, secret), body, now, WebhookVerifyOptions{}); err != nil {
		t.Fatalf("a rotating receiver refuses the old secret's signature: %v", err)
	}
	for _, c := range []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		want    error
	}{
		{"wrong secret", []string{"hook-secret-xxx-0123456789"}, signed(now, secret), string(body), ErrSignatureMismatch},
		{"changed body", []string{secret}, signed(now, secret), `{"id":"e2"}`, ErrSignatureMismatch},
		{"too old", []string{secret}, signed(now.Add(-6*time.Minute), secret), string(body), ErrSignatureTimestamp},
		{"too new", []string{secret}, signed(now.Add(2*time.Minute), secret), string(body), ErrSignatureTimestamp},
		{"no secret", nil, signed(now, secret), string(body), ErrWebhookSecret},
		{"empty secret", []string{""}, signed(now, secret), string(body), ErrWebhookSecret},
		{"bad whsec", []string{"whsec_!!"}, signed(now, secret), string(body), ErrWebhookSecret},
		{"no headers", []string{secret}, http.Header{}, string(body), ErrStandardHeaders},
		{"only v1a", []string{secret}, func() http.Header {
			h := signed(now, secret)
			h.Set(StandardSignatureHeader, strings.Replace(h.Get(StandardSignatureHeader), "v1,", "v1a,", 1))
			return h
		}(), string(body), ErrStandardHeaders},
	} {
		if err := VerifyStandardWebhook(c.secrets, c.h, []byte(c.body), now, WebhookVerifyOptions{}); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
