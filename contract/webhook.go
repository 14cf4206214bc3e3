package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Webhooks to the shop (DESIGN.md, "Shop hand-over"). The backend POSTs one WebhookEvent per
// order change (and one DrawEvent per turn of a draw entrant's fate) to the shop, signed with
// the header SignatureHeader. A shop written in Go checks a request with VerifyWebhook (or
// VerifyWebhookWith) before it trusts the body, then dedupes by the event's ID: the backend
// delivers at least once.
//
// The signature is HMAC-SHA256(secret, "<t>.<raw body>"). The event's ID, its idempotency key,
// is a field of that body, so it is signed: an event replayed under a fresh ID to slip past the
// receiver's dedupe fails verification. The Idempotency-Key header repeats the ID for
// receivers that dedupe before parsing, but headers are not signed: dedupe by the verified
// body's id (or check that the two agree).

// Webhook event types.
const (
	EventOrderCreated   = "order.created"
	EventOrderPaid      = "order.paid"
	EventOrderCancelled = "order.cancelled"
	EventOrderFailed    = "order.failed"
)

// The waitlist's event types (docs/room.md, "The waitlist"): a unit released in a sold-out room
// sale was offered to a waiter, or the offer's window ended unbought (the unit goes on to the
// next waiter). A bought offer is an order like any other: order.created follows.
const (
	EventUnitOffered = "unit.offered"
	EventUnitPassed  = "unit.passed"
)

// IsUnitEvent reports whether typ is a waitlist event's type (EventUnitOffered,
// EventUnitPassed): its body is a UnitEvent, not a WebhookEvent.
func IsUnitEvent(typ string) bool { return strings.HasPrefix(typ, "unit.") }

// IsDrawEvent reports whether typ is a draw event's type (EventDrawWon, EventDrawLost,
// EventDrawExpired): its body is a DrawEvent, not a WebhookEvent.
func IsDrawEvent(typ string) bool { return strings.HasPrefix(typ, "draw.") }

// SignatureHeader carries the webhook's signature: "t=<unix seconds>,v1=<hex HMAC-SHA256>"
// with one v1 per signing secret (two while a secret is being rotated).
const SignatureHeader = "Seckill-Signature"

// WebhookEvent is the JSON body of a webhook.
type WebhookEvent struct {
	// ID is the event's idempotency key: the same event delivered twice has the same ID. It is
	// signed as part of the body (the Idempotency-Key header, a copy, is not), and it is the
	// webhook-id of the Standard Webhooks signature.
	ID string `json:"id"`
	// Version is the body's version, WebhookEventVersion (absent from the events of releases
	// that did not send it: read 0 as 1).
	Version int    `json:"version,omitempty"`
	Type    string `json:"type"`
	OrderID string `json:"order_id"`
	SaleID  string `json:"sale_id"`
	// Variant is the order's variant ("" for a sale without variants) and Quantity its units.
	Variant  string `json:"variant"`
	Quantity int    `json:"quantity"`
	UserID   string `json:"user_id"`
	// At is when the order changed (the database's clock).
	At time.Time `json:"at"`
}

// DrawEvent is the JSON body of a draw's webhook (types EventDraw*). It is sent, signed and
// deduplicated exactly like a WebhookEvent; a receiver tells the two apart by Type. One
// entrant's events are delivered in order (won, then expired), like one order's.
type DrawEvent struct {
	// ID is the event's idempotency key, as WebhookEvent.ID.
	ID string `json:"id"`
	// Version is the body's version, as WebhookEvent.Version.
	Version int    `json:"version,omitempty"`
	Type    string `json:"type"`
	SaleID  string `json:"sale_id"`
	UserID  string `json:"user_id"`
	EntryID string `json:"entry_id"`
	// Variant is the variant (size) the entry was for.
	Variant string `json:"variant"`
	// Wave is the wave that made the entry a winner (won, expired; absent for lost).
	Wave int `json:"wave,omitempty"`
	// ClaimUntil is when the winner's claim window ends (won, expired; absent for lost).
	ClaimUntil *time.Time `json:"claim_until,omitempty"`
	// At is when the event happened (the database's clock).
	At time.Time `json:"at"`
}

// UnitEvent is the JSON body of a waitlist's webhook (types EventUnit*). It is sent, signed and
// deduplicated exactly like a WebhookEvent; one waiter's events are delivered in order
// (offered, then passed).
type UnitEvent struct {
	// ID is the event's idempotency key, as WebhookEvent.ID.
	ID string `json:"id"`
	// Version is the body's version, as WebhookEvent.Version.
	Version int    `json:"version,omitempty"`
	Type    string `json:"type"`
	SaleID  string `json:"sale_id"`
	// UserID is the waiter offered the unit.
	UserID string `json:"user_id"`
	// OfferUntil is when the offer's window ends: he may buy until then.
	OfferUntil time.Time `json:"offer_until"`
	// At is when the event was recorded (the database's clock).
	At time.Time `json:"at"`
}

// Errors of VerifyWebhook. Test them with errors.Is.
var (
	// ErrSignatureHeader: the header is missing or malformed.
	ErrSignatureHeader = errors.New("webhook: malformed " + SignatureHeader + " header")
	// ErrSignatureTimestamp: the signature is older than the tolerance (a replay, or a clock
	// far behind) or further in the future than MaxFuture (a clock far ahead, or a forged time).
	ErrSignatureTimestamp = errors.New("webhook: signature timestamp outside the tolerance")
	// ErrWebhookSecret: the receiver has no secret to verify with (an empty one is an unset
	// variable, not a key: anyone can sign under it).
	ErrWebhookSecret = errors.New("webhook: empty signing secret")
	// ErrSignatureMismatch: no v1 signature matches the body under the secret.
	ErrSignatureMismatch = errors.New("webhook: no signature matches")
)

// maxSignatures bounds the v1 entries a header may carry: a sender rotates between two
// secrets; more than a few is an attack on the verifier's CPU.
const maxSignatures = 8

// Signature is a parsed SignatureHeader.
type Signature struct {
	Timestamp int64
	V1        [][]byte // the v1 MACs, decoded
}

// ParseSignature parses a SignatureHeader value. Entries other than t and v1 are ignored (a
// future scheme may add its own next to v1); t must appear once.
func ParseSignature(header string) (Signature, error) {
	var sig Signature
	if len(header) > 1024 {
		return sig, ErrSignatureHeader
	}
	seenT := false
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return sig, ErrSignatureHeader
		}
		switch k {
		case "t":
			if seenT || v == "" || len(v) > 12 {
				return sig, ErrSignatureHeader
			}
			for i := 0; i < len(v); i++ {
				if v[i] < '0' || v[i] > '9' {
					return sig, ErrSignatureHeader
				}
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return sig, ErrSignatureHeader
			}
			sig.Timestamp, seenT = n, true
		case "v1":
			if len(v) != 2*sha256.Size || len(sig.V1) == maxSignatures {
				return sig, ErrSignatureHeader
			}
			mac, err := hex.DecodeString(v)
			if err != nil {
				return sig, ErrSignatureHeader
			}
			sig.V1 = append(sig.V1, mac)
		}
	}
	if !seenT || len(sig.V1) == 0 {
		return sig, ErrSignatureHeader
	}
	return sig, nil
}

// webhookMAC is HMAC-SHA256(key, "<t>.<body>"), the key the secret's (WebhookKey).
func webhookMAC(secret string, t int64, body []byte) []byte {
	m := hmac.New(sha256.New, webhookKey(secret))
	m.Write(strconv.AppendInt(nil, t, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// SignWebhook returns the SignatureHeader value for body sent at t: one v1 per secret, in the
// order given (the new secret first during a rotation).
func SignWebhook(secrets []string, t time.Time, body []byte) string {
	ts := t.Unix()
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(ts, 10))
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(webhookMAC(s, ts, body)))
	}
	return b.String()
}

// Defaults of WebhookVerifyOptions.
const (
	// DefaultWebhookTolerance is how old a signature may be: long enough for a slow network
	// and a little clock skew, short enough that a captured request is soon useless. The
	// sender signs every attempt afresh, so a retry is never refused as old.
	DefaultWebhookTolerance = 5 * time.Minute
	// DefaultWebhookMaxFuture is how far ahead of the receiver's clock a signature's time may
	// be: clock skew between NTP-synchronised hosts is well under this.
	DefaultWebhookMaxFuture = time.Minute
)

// WebhookVerifyOptions tunes VerifyWebhookWith. The zero value takes the defaults.
type WebhookVerifyOptions struct {
	// Tolerance is how old a signature may be (0: DefaultWebhookTolerance).
	Tolerance time.Duration
	// MaxFuture is how far in the future a signature's time may be (0:
	// DefaultWebhookMaxFuture); never more than Tolerance.
	MaxFuture time.Duration
}

// VerifyWebhookWith checks that body was signed by the sender of header (the value of
// SignatureHeader) with one of secrets, at a time no more than opts.Tolerance before now and no
// more than opts.MaxFuture after it. Pass the raw body as received, before any JSON decoding:
// the MAC covers its bytes, the event's id (its idempotency key) included, so a body whose id
// was changed is refused like any other tampering.
//
// secrets are the receiver's (both while it rotates; any one matching is enough). Every one of
// them must be non-empty: no secret, or an empty one, is ErrWebhookSecret.
func VerifyWebhookWith(secrets []string, header string, body []byte, now time.Time, opts WebhookVerifyOptions) error {
	if len(secrets) == 0 {
		return ErrWebhookSecret
	}
	for _, s := range secrets {
		if s == "" {
			return ErrWebhookSecret
		}
	}
	tolerance, future := opts.window()
	sig, err := ParseSignature(header)
	if err != nil {
		return err
	}
	// In seconds, the signature's unit; a timestamp of 12 digits at most cannot overflow.
	age := now.Unix() - sig.Timestamp
	if age > int64(tolerance/time.Second) || -age > int64(future/time.Second) {
		return ErrSignatureTimestamp
	}
	for _, s := range secrets {
		if _, err := WebhookKey(s); err != nil {
			return ErrWebhookSecret
		}
	}
	ok := false
	for _, secret := range secrets {
		want := webhookMAC(secret, sig.Timestamp, body)
		for _, mac := range sig.V1 {
			// Every pair is compared, so the time taken does not say which one matched.
			ok = hmac.Equal(mac, want) || ok
		}
	}
	if !ok {
		return ErrSignatureMismatch
	}
	return nil
}

// VerifyWebhook is VerifyWebhookWith for one secret: the signature may be up to tolerance old
// (0: DefaultWebhookTolerance) and up to DefaultWebhookMaxFuture (or tolerance, if shorter)
// ahead of now. An empty secret is ErrWebhookSecret. The raw body is signed, its id (the
// idempotency key) included.
func VerifyWebhook(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	return VerifyWebhookWith([]string{secret}, header, body, now, WebhookVerifyOptions{Tolerance: tolerance})
}

// window is the accepted age of a signature's timestamp and how far ahead of now it may be:
// the options' values, or the defaults where they are not positive; never more ahead than old.
func (opts WebhookVerifyOptions) window() (tolerance, future time.Duration) {
	tolerance, future = opts.Tolerance, opts.MaxFuture
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if future <= 0 {
		future = DefaultWebhookMaxFuture
	}
	return tolerance, min(future, tolerance)
}
