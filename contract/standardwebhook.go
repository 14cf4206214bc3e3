package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Every webhook is signed twice: with SignatureHeader (above), and as the Standard Webhooks
// specification (https://www.standardwebhooks.com, symmetric scheme) asks, so that a shop in
// any language verifies it with that project's libraries (npm `standardwebhooks`, PyPI
// `standardwebhooks`, Go, PHP, Ruby, Java, ...) instead of writing the HMAC by hand:
//
//	webhook-id:        the event's id (its idempotency key, the body's "id", the same on every attempt)
//	webhook-timestamp: the attempt's time, Unix seconds (the t of SignatureHeader)
//	webhook-signature: "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>", one per secret, space-separated
//
// The key is the secret's: a secret written "whsec_<base64>" (the specification's form) is
// the bytes it encodes; any other secret is its own bytes, and StandardWebhookSecret gives the
// "whsec_" form of it for the shop's library. Both signatures use the same key.
const (
	StandardIDHeader        = "webhook-id"
	StandardTimestampHeader = "webhook-timestamp"
	StandardSignatureHeader = "webhook-signature"
)

// StandardSecretPrefix marks a secret in the Standard Webhooks form: the prefix, then the key
// in standard base64.
const StandardSecretPrefix = "whsec_"

// WebhookEventVersion is the version of the webhook bodies (WebhookEvent, DrawEvent) the
// backend sends, in their "version" field. A compatible change (a new field, a new event type)
// keeps it; a change a receiver must act on raises it (docs/versioning.md).
const WebhookEventVersion = 1

// ErrStandardHeaders: a Standard Webhooks header is missing or malformed.
var ErrStandardHeaders = errors.New("webhook: missing or malformed webhook-id, webhook-timestamp or webhook-signature")

// WebhookKey is the HMAC key of secret: the decoded bytes of a "whsec_" secret, else the
// secret's own bytes. A "whsec_" secret that is not valid base64 is an error.
func WebhookKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, StandardSecretPrefix); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(key) == 0 {
			return nil, errors.New("webhook: a " + StandardSecretPrefix + " secret must be non-empty standard base64")
		}
		return key, nil
	}
	return []byte(secret), nil
}

// webhookKey is WebhookKey for a secret already accepted (the backend's ParseSecrets refuses
// bad ones); a bad one signs nothing anyone can verify.
func webhookKey(secret string) []byte {
	key, err := WebhookKey(secret)
	if err != nil {
		return nil
	}
	return key
}

// StandardWebhookSecret is secret in the Standard Webhooks form ("whsec_" + base64 of its key),
// what a shop passes to that project's libraries: `new Webhook(secret)` in JavaScript.
func StandardWebhookSecret(secret string) (string, error) {
	key, err := WebhookKey(secret)
	if err != nil {
		return "", err
	}
	return StandardSecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

func standardMAC(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// SignStandardWebhook sets the three Standard Webhooks headers on h for the event id's body
// sent at t, one signature per secret in the order given (the new secret first while rotating).
func SignStandardWebhook(h http.Header, secrets []string, id string, t time.Time, body []byte) {
	ts := t.Unix()
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(standardMAC(webhookKey(s), id, ts, body)))
	}
	h.Set(StandardIDHeader, id)
	h.Set(StandardTimestampHeader, strconv.FormatInt(ts, 10))
	h.Set(StandardSignatureHeader, strings.Join(sigs, " "))
}

// VerifyStandardWebhook checks the Standard Webhooks headers of a request: one v1 signature
// made with one of secrets over "<webhook-id>.<webhook-timestamp>.<raw body>", at a time within
// opts' window of now (as VerifyWebhookWith). Signatures of other schemes (v1a, ...) are
// skipped. It is what the specification's libraries do; use either. It covers the webhook-id
// header, not the body: check that the body's id is that id, and dedupe by it.
func VerifyStandardWebhook(secrets []string, h http.Header, body []byte, now time.Time, opts WebhookVerifyOptions) error {
	if len(secrets) == 0 {
		return ErrWebhookSecret
	}
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		key, err := WebhookKey(s)
		if s == "" || err != nil {
			return ErrWebhookSecret
		}
		keys = append(keys, key)
	}
	id, tsv, sigv := h.Get(StandardIDHeader), h.Get(StandardTimestampHeader), h.Get(StandardSignatureHeader)
	if id == "" || len(id) > 256 || tsv == "" || len(tsv) > 12 || sigv == "" || len(sigv) > 1024 {
		return ErrStandardHeaders
	}
	ts, err := strconv.ParseInt(tsv, 10, 64)
	if err != nil || ts < 0 {
		return ErrStandardHeaders
	}
	tolerance, future := opts.window()
	age := now.Unix() - ts
	if age > int64(tolerance/time.Second) || -age > int64(future/time.Second) {
		return ErrSignatureTimestamp
	}
	var macs [][]byte
	for _, part := range strings.Fields(sigv) {
		ver, sig, ok := strings.Cut(part, ",")
		if !ok {
			return ErrStandardHeaders
		}
		if ver != "v1" {
			continue
		}
		mac, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(mac) != sha256.Size || len(macs) == maxSignatures {
			return ErrStandardHeaders
		}
		macs = append(macs, mac)
	}
	if len(macs) == 0 {
		return ErrStandardHeaders
	}
	ok := false
	for _, key := range keys {
		want := standardMAC(key, id, ts, body)
		for _, mac := range macs {
			ok = hmac.Equal(mac, want) || ok
		}
	}
	if !ok {
		return ErrSignatureMismatch
	}
	return nil
}
