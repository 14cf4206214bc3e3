// Package dpop checks the proofs of possession that bind a purchase token or a room ticket to
// the buyer's device, in the style of OAuth DPoP (RFC 9449): the page holds a P-256 key it
// cannot export (WebCrypto, extractable false, kept in IndexedDB), the token or ticket is
// sealed with the key's RFC 7638 thumbprint, and every request that spends it carries a fresh
// proof signed with that key. A copy of the token, taken to another machine, is worth nothing
// there: the key did not travel with it.
//
// A proof is a compact JWS (header typ "dpop+jwt", alg ES256, jwk the public key) over
//
//	{"htm": method, "htu": URL, "iat": seconds, "jti": unique id, "ath": token hash}
//
// Check verifies one with go-jose (no JWS code here): signature against the header's key,
// method, URL, age, and ath. Whether its jti was seen before is decided where the purchase is
// (lua/gate.lua, in the purchase's one script call), so replay is exact across gateways.
//
// The package imports no Caddy: the handlers (seckill_token, seckill_gate, seckill_room) call
// it, and a shop's own services may.
package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/contract"
)

// Header is the request header that carries a proof (RFC 9449, section 4.1).
const Header = "DPoP"

// Type is the proof's JOSE typ (RFC 9449, section 4.2).
const Type = "dpop+jwt"

// Binding is a sale's device_binding setting.
type Binding string

// Bindings.
const (
	// Off: tokens and tickets are bearer values, no proof is read (the default: the demo's
	// curl steps keep working).
	Off Binding = "off"
	// Optional: a request that carries a proof gets a bound token or ticket; a bound one
	// needs a proof wherever it is spent; an unbound one still works without.
	Optional Binding = "optional"
	// Required: no token or ticket without a proof, and none spent without one.
	Required Binding = "required"
)

// ParseBinding reads a device_binding value; "" is Off.
func ParseBinding(s string) (Binding, error) {
	switch Binding(s) {
	case "", Off:
		return Off, nil
	case Optional, Required:
		return Binding(s), nil
	}
	return "", fmt.Errorf("device_binding must be off, optional or required, not %q", s)
}

// Defaults.
const (
	// DefaultMaxAge is how old a proof may be (its iat) when it arrives. RFC 9449 leaves the
	// window to the server; a minute covers a slow network and keeps the replay store small.
	DefaultMaxAge = 60 * time.Second
	// Leeway is how far in the future a proof's iat may be: clocks of browsers drift a little
	// (the client in clients/js corrects its own from the gateway's Date header).
	Leeway = 5 * time.Second
)

// MaxLen bounds a proof before anything parses it: a P-256 key, the claims and a signature
// fit in well under a kilobyte; anything longer is refused unread.
const MaxLen = 2048

// Errors of Check. Each is one refusal code (see Code).
var (
	// ErrMissing: no proof where one is needed.
	ErrMissing = errors.New("dpop: no proof")
	// ErrInvalid: not a well-formed proof, or its signature does not verify with its own key,
	// or its ath is not the hash of the token presented with it.
	ErrInvalid = errors.New("dpop: invalid proof")
	// ErrTarget: a genuine proof made for another method or URL.
	ErrTarget = errors.New("dpop: proof for another request")
	// ErrStale: a proof older than the window, or from the future.
	ErrStale = errors.New("dpop: proof too old")
	// ErrKey: a genuine proof by a key the token or ticket was not sealed with (a copy used on
	// another device).
	ErrKey = errors.New("dpop: proof by another key")
	// ErrUnbound: the sale requires binding and the token or ticket was issued without a key.
	ErrUnbound = errors.New("dpop: token not bound to a key")
	// ErrReplayed: the proof's jti was seen before (decided by the caller's replay store).
	ErrReplayed = errors.New("dpop: proof replayed")
)

// Proof is what a checked proof says.
type Proof struct {
	// JKT is the RFC 7638 SHA-256 thumbprint of the proof's key, base64url without padding
	// (43 characters): what tokens and tickets are sealed with.
	JKT string
	// JTI is the proof's unique id ([A-Za-z0-9_-], 16 to 64 characters).
	JTI string
	// IssuedAt is the proof's iat.
	IssuedAt time.Time
}

// Request is the request a proof must be for.
type Request struct {
	Method string
	// Host and Path of the request (the htu's scheme is not compared: a gateway behind a TLS
	// terminator sees plain http; query and fragment are ignored, as RFC 9449 says).
	Host, Path string
	// Token is the token or ticket presented with the proof ("" for none: the issue itself);
	// the proof's ath must then be its hash.
	Token string
	// Now is the gateway's clock; MaxAge the window (DefaultMaxAge when 0).
	Now    time.Time
	MaxAge time.Duration
}

// claims are a proof's payload.
type claims struct {
	HTM string      `json:"htm"`
	HTU string      `json:"htu"`
	IAT json.Number `json:"iat"`
	JTI string      `json:"jti"`
	ATH string      `json:"ath"`
}

var algs = []jose.SignatureAlgorithm{jose.ES256}

// Check verifies proof for r (RFC 9449, section 4.3): one well-formed compact JWS of typ
// dpop+jwt and alg ES256 whose embedded public P-256 key verifies its signature; htm is r's
// method and htu r's host and path; iat within MaxAge before r.Now (and at most Leeway after);
// a jti of 16 to 64 base64url characters; ath the token's hash when a token is presented (and
// none when not). It does not know whether the jti was seen before: the caller records it.
func Check(proof string, r Request) (Proof, error) {
	var p Proof
	if proof == "" {
		return p, ErrMissing
	}
	if len(proof) > MaxLen || strings.Count(proof, ".") != 2 {
		return p, ErrInvalid
	}
	jws, err := jose.ParseSignedCompact(proof, algs)
	if err != nil || len(jws.Signatures) != 1 {
		return p, ErrInvalid
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != Type || h.JSONWebKey == nil {
		return p, ErrInvalid
	}
	pub, ok := h.JSONWebKey.Key.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() || !h.JSONWebKey.IsPublic() {
		return p, ErrInvalid
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		return p, ErrInvalid
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return p, ErrInvalid
	}
	iat, err := c.IAT.Int64()
	if err != nil || !validJTI(c.JTI) || c.HTM == "" || c.HTU == "" {
		return p, ErrInvalid
	}
	if r.Token != "" && c.ATH != TokenHash(r.Token) || r.Token == "" && c.ATH != "" {
		return p, ErrInvalid
	}
	if c.HTM != r.Method || !sameTarget(c.HTU, r.Host, r.Path) {
		return p, ErrTarget
	}
	maxAge := r.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	at := time.Unix(iat, 0)
	if at.Before(r.Now.Add(-maxAge)) || at.After(r.Now.Add(Leeway)) {
		return p, ErrStale
	}
	tp, err := h.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		return p, ErrInvalid
	}
	return Proof{JKT: base64.RawURLEncoding.EncodeToString(tp), JTI: c.JTI, IssuedAt: at}, nil
}

// sameTarget compares a proof's htu with the request's host and path: scheme http or https,
// no user info, query and fragment ignored.
func sameTarget(htu, host, path string) bool {
	u, err := url.Parse(htu)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	return strings.EqualFold(u.Host, host) && p == path
}

// TokenHash is a proof's ath for a token or ticket: base64url (no padding) of SHA-256 of its
// ASCII (RFC 9449, section 4.2).
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ValidJKT reports whether s has the form of a thumbprint: 43 base64url characters (32 bytes).
func ValidJKT(s string) bool { return len(s) == 43 && b64url(s) }

func validJTI(s string) bool { return len(s) >= 16 && len(s) <= 64 && b64url(s) }

func b64url(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ReplayWindow is how long a proof's jti must be remembered: as long as the proof could be
// accepted (MaxAge back, Leeway ahead).
func ReplayWindow(maxAge time.Duration) time.Duration {
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	return maxAge + Leeway
}

// Refusal is the answer to a Check error (and ErrKey, ErrUnbound): 401 for a proof missing,
// malformed, for another request, stale or replayed (the client can make a good one), 403 for
// a token or ticket that this key cannot spend. Any other error is not the proof's: ok false.
func Refusal(err error) (r hcore.Refusal, ok bool) {
	switch {
	case errors.Is(err, ErrMissing):
		return hcore.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeProofRequired,
			Message: "this needs a proof of possession of your device's key in the DPoP header"}, true
	case errors.Is(err, ErrInvalid):
		return hcore.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeInvalidProof,
			Message: "the DPoP proof is not valid (a compact JWS, typ dpop+jwt, ES256, with its public key, htm, htu, iat, jti and ath)"}, true
	case errors.Is(err, ErrTarget):
		return hcore.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeProofWrongTarget,
			Message: "the DPoP proof was made for another method or URL"}, true
	case errors.Is(err, ErrStale):
		return hcore.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeProofExpired,
			Message: "the DPoP proof is too old (or from the future): make a new one"}, true
	case errors.Is(err, ErrReplayed):
		return hcore.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeProofReplayed,
			Message: "this DPoP proof was already used: make a new one for every request"}, true
	case errors.Is(err, ErrKey):
		return hcore.Refusal{Status: http.StatusForbidden, Code: contract.CodeProofKeyMismatch,
			Message: "this token or ticket is bound to another device's key"}, true
	case errors.Is(err, ErrUnbound):
		return hcore.Refusal{Status: http.StatusForbidden, Code: contract.CodeUnboundToken,
			Message: "this sale binds tokens and tickets to the device: take a new one with a DPoP proof"}, true
	}
	return hcore.Refusal{}, false
}
