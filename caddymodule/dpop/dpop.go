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
// Check verifies one: the header's key (parsed once per header), the signature with
// crypto/ecdsa, method, URL, age, and ath. Whether its jti was seen before is decided where the purchase is
// (lua/gate.lua, in the purchase's one script call), so replay is exact across gateways.
//
// The package imports no Caddy: the handlers (seckill_token, seckill_gate, seckill_room) call
// it, and a shop's own services may.
package dpop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

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

// Check verifies proof for r (RFC 9449, section 4.3): one well-formed compact JWS of typ
// dpop+jwt and alg ES256 whose embedded public P-256 key verifies its signature; htm is r's
// method and htu r's host and path; iat within MaxAge before r.Now (and at most Leeway after);
// a jti of 16 to 64 base64url characters; ath the token's hash when a token is presented (and
// none when not). It does not know whether the jti was seen before: the caller records it.
//
// A device signs every proof under the same protected header (its key does not change), so
// the header is parsed, its key checked to be on the curve and its thumbprint computed once
// per header (headerKeys, bounded); each proof still has its signature verified with
// crypto/ecdsa over its own header and payload.
func Check(proof string, r Request) (Proof, error) {
	var p Proof
	if proof == "" {
		return p, ErrMissing
	}
	if len(proof) > MaxLen || strings.Count(proof, ".") != 2 {
		return p, ErrInvalid
	}
	head, rest, _ := strings.Cut(proof, ".")
	body, sig, _ := strings.Cut(rest, ".")
	k, err := headerKeys.of(head)
	if err != nil {
		return p, ErrInvalid
	}
	// An ES256 signature is R || S, 32 bytes each (RFC 7518, section 3.4): 86 characters.
	var rs [64]byte
	if len(sig) != 86 {
		return p, ErrInvalid
	}
	if n, err := base64.RawURLEncoding.Decode(rs[:], []byte(sig)); err != nil || n != len(rs) {
		return p, ErrInvalid
	}
	digest := sha256.Sum256([]byte(proof[:len(head)+1+len(body)]))
	if !ecdsa.Verify(k.pub, digest[:], new(big.Int).SetBytes(rs[:32]), new(big.Int).SetBytes(rs[32:])) {
		return p, ErrInvalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
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
	return Proof{JKT: k.jkt, JTI: c.JTI, IssuedAt: at}, nil
}

// headerKey is what a proof's protected header says, checked: its public key and the key's
// RFC 7638 thumbprint.
type headerKey struct {
	pub *ecdsa.PublicKey
	jkt string
}

// maxHeaderKeys bounds the parsed headers one gateway keeps (about 200 bytes each, a few MB):
// past it the cache starts again. A header is a device's key; a buyer keeps his.
const maxHeaderKeys = 16384

// headerKeys are the protected headers seen before, by their base64url form.
var headerKeys = headerCache{max: maxHeaderKeys}

type headerCache struct {
	max int
	mu  sync.RWMutex
	m   map[string]headerKey
}

// of is the checked key of the protected header head (base64url), parsed on first sight.
// Only headers that check are kept: a malformed one costs its parse every time.
func (c *headerCache) of(head string) (headerKey, error) {
	c.mu.RLock()
	k, ok := c.m[head]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	k, err := parseHeader(head)
	if err != nil {
		return k, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string]headerKey)
	}
	c.m[strings.Clone(head)] = k
	c.mu.Unlock()
	return k, nil
}

// len is how many headers are kept.
func (c *headerCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// parseHeader checks a proof's protected header (base64url of a JSON object): alg ES256, typ
// dpop+jwt, no crit (no extension is understood here), and jwk a public P-256 key (kty EC,
// crv P-256, x and y of 32 bytes each, a point on the curve, no private part). Member names
// are matched exactly, as JOSE says; unknown members are ignored.
func parseHeader(head string) (headerKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return headerKey{}, ErrInvalid
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil {
		return headerKey{}, ErrInvalid
	}
	if _, ok := h["crit"]; ok || jsonString(h["alg"]) != "ES256" || jsonString(h["typ"]) != Type {
		return headerKey{}, ErrInvalid
	}
	var jwk map[string]json.RawMessage
	if err := json.Unmarshal(h["jwk"], &jwk); err != nil || jwk == nil {
		return headerKey{}, ErrInvalid
	}
	if _, private := jwk["d"]; private || jsonString(jwk["kty"]) != "EC" || jsonString(jwk["crv"]) != "P-256" {
		return headerKey{}, ErrInvalid
	}
	x, errX := base64.RawURLEncoding.DecodeString(strings.TrimRight(jsonString(jwk["x"]), "="))
	y, errY := base64.RawURLEncoding.DecodeString(strings.TrimRight(jsonString(jwk["y"]), "="))
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		return headerKey{}, ErrInvalid
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return headerKey{}, ErrInvalid
	}
	return headerKey{pub: pub, jkt: thumbprint(x, y)}, nil
}

// thumbprint is the RFC 7638 SHA-256 thumbprint of the P-256 public key (x, y), 32 bytes each,
// base64url without padding: the hash of its required members in lexical order, without
// whitespace.
func thumbprint(x, y []byte) string {
	in := `{"crv":"P-256","kty":"EC","x":"` + base64.RawURLEncoding.EncodeToString(x) +
		`","y":"` + base64.RawURLEncoding.EncodeToString(y) + `"}`
	sum := sha256.Sum256([]byte(in))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// jsonString is the JSON string v, "" when v is not one.
func jsonString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
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
