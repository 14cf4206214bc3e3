// Package tokenformat is the one-time purchase token: its format, signing and verification. It is
// plain Go (no Caddy, no Redis, no clock of its own) so the issuing handler (seckill_token),
// the gate (seckill_gate) and users' own services share one definition.
//
// A token is
//
//	1.<kid>.<exp>.<nonce>.<mac>
//
// where 1 is the format version, kid names the signing key (so keys rotate without refusing
// tokens already issued), exp is the expiry in unix seconds (base 36), nonce is 128 random bits
// (base64url) and mac is HMAC-SHA256 over (version, kid, sale, user, nonce, exp) (base64url).
// Sale and user are not in the token: they come from the request and are bound by the MAC, so a
// token sent by another user or to another sale fails verification, and the token leaks no id.
// Every part is URL-safe, so the token also fits in a path segment.
//
// A token bound to a device (device_binding, caddymodule/dpop) is
//
//	2.<kid>.<exp>.<nonce>.<mac>
//
// of the same lengths, whose MAC also covers the RFC 7638 thumbprint of the key the page holds
// (a domain of its own, "2"). The thumbprint is not in the token either: it comes from the
// proof presented with it, so a copy spent with another key fails verification as a forgery
// would, and VerifyBound tells the two apart only by the proof's key (ErrKey is the caller's).
//
// Single use is not decided here: the issuer records the nonce in the sale's `tokens` hash
// (field user id, value StoreValue(claims)) and the gate's Lua script deletes it atomically
// with the purchase.
package tokenformat

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// Version is the token format version this package issues for a bearer token;
// BoundVersion the one of a token bound to a device's key.
const (
	Version      = "1"
	BoundVersion = "2"
)

// Verification errors. ErrInvalid covers every forged, malformed, foreign or unknown-key token:
// a client learns nothing from finer distinctions.
var (
	ErrInvalid = errors.New("invalid purchase token")
	ErrExpired = errors.New("purchase token expired")
)

// MinKeyLen is the shortest secret accepted for a signing key (bytes). The seckill app holds
// configured keys to more (internal/weaksecret: no repeated unit, no published value); the
// keyring checks the length only, so a test may sign with a simple key.
const MinKeyLen = 32

// NonceLen is the length of a token's nonce: 16 random bytes in unpadded base64url.
const NonceLen = 22

// MaxLen bounds the length of a well-formed token: version, a 16-character key id, the
// longest base-36 int64, the nonce and the MAC, with their four dots. Verify refuses anything
// longer before looking at it.
const MaxLen = 1 + 1 + maxKIDLen + 1 + 13 + 1 + NonceLen + 1 + macLen

const (
	maxKIDLen = 16
	macLen    = 43 // 32 bytes, unpadded base64url
	blockSize = 64 // SHA-256 block size
	// macDomain separates these MACs from any other use of the same secret.
	macDomain      = "seckill-token\x00" + Version + "\x00"
	boundMacDomain = "seckill-token\x00" + BoundVersion + "\x00"
	jktLen         = 43 // a SHA-256 thumbprint, unpadded base64url
	// maxMsg is the longest MAC input: domain, kid, sale, user, nonce, exp, the thumbprint of
	// a bound token and their separators.
	maxMsg = len(boundMacDomain) + maxKIDLen + 1 + 64 + 1 + 64 + 1 + NonceLen + 1 + 13 + 1 + jktLen
)

// Key is one HMAC key with its id.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring holds the keys tokens are verified with; the first one signs new tokens.
type Keyring struct {
	keys []ringKey
}

// ringKey is a key with its HMAC pads precomputed (RFC 2104), so verifying a token hashes
// into stack buffers and allocates nothing.
type ringKey struct {
	id         string
	ipad, opad [blockSize]byte
}

// NewKeyring checks and returns a keyring. Key ids are 1 to 16 characters of [A-Za-z0-9_-],
// unique; secrets are at least MinKeyLen bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("tokens: no signing key configured")
	}
	kr := &Keyring{keys: make([]ringKey, 0, len(keys))}
	seen := map[string]bool{}
	for _, k := range keys {
		if !validKID(k.ID) {
			return nil, fmt.Errorf("tokens: key id %q: 1 to 16 characters of [A-Za-z0-9_-]", k.ID)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("tokens: key id %q configured twice", k.ID)
		}
		seen[k.ID] = true
		if len(k.Secret) == 0 {
			return nil, fmt.Errorf("tokens: key %q: the secret is empty (is its environment variable set?)", k.ID)
		}
		if len(k.Secret) < MinKeyLen {
			return nil, fmt.Errorf("tokens: key %q: secret shorter than %d bytes", k.ID, MinKeyLen)
		}
		rk := ringKey{id: k.ID}
		secret := k.Secret
		if len(secret) > blockSize {
			sum := sha256.Sum256(secret)
			secret = sum[:]
		}
		for i := range blockSize {
			var b byte
			if i < len(secret) {
				b = secret[i]
			}
			rk.ipad[i] = b ^ 0x36
			rk.opad[i] = b ^ 0x5c
		}
		kr.keys = append(kr.keys, rk)
	}
	return kr, nil
}

func validKID(s string) bool {
	return len(s) <= maxKIDLen && contract.ValidID(s)
}

func (k *Keyring) key(id string) *ringKey {
	for i := range k.keys {
		if k.keys[i].id == id {
			return &k.keys[i]
		}
	}
	return nil
}

// SigningKeyID is the id of the key new tokens are signed with (the first one).
func (k *Keyring) SigningKeyID() string { return k.keys[0].id }

// Claims is what a verified token says.
type Claims struct {
	KeyID   string
	Nonce   string
	Expires time.Time
}

// NewNonce returns 128 bits from crypto/rand in unpadded base64url (NonceLen characters).
func NewNonce() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// Issue makes a fresh token for (sale, user) expiring at exp (whole seconds, rounded down),
// signed with the first key.
func (k *Keyring) Issue(sale, user string, exp time.Time) (token string, c Claims, err error) {
	nonce, err := NewNonce()
	if err != nil {
		return "", c, err
	}
	return k.Sign(sale, user, nonce, exp)
}

// Sign makes the token of a nonce the caller drew with NewNonce (the issuer records the nonce
// in Redis before it knows the expiry Redis decides), signed with the first key. exp is
// rounded down to whole seconds; StoreValue of the returned claims is what the gate expects
// in the sale's tokens hash.
func (k *Keyring) Sign(sale, user, nonce string, exp time.Time) (token string, c Claims, err error) {
	return k.SignBound(sale, user, nonce, exp, "")
}

// SignBound is Sign for a token bound to the key of thumbprint jkt (43 base64url characters,
// dpop.Proof.JKT): version 2, spent only with a proof of that key. jkt "" is Sign.
func (k *Keyring) SignBound(sale, user, nonce string, exp time.Time, jkt string) (token string, c Claims, err error) {
	if jkt != "" && (len(jkt) != jktLen || !contract.ValidID(jkt)) {
		return "", c, errors.New("tokens: the thumbprint must be 43 base64url characters")
	}
	if !contract.ValidID(sale) || !contract.ValidID(user) {
		return "", c, errors.New("tokens: sale and user must be valid ids")
	}
	if !ValidNonce(nonce) {
		return "", c, errors.New("tokens: the nonce must come from NewNonce")
	}
	if exp.Unix() <= 0 {
		return "", c, errors.New("tokens: expiry before 1970")
	}
	key := &k.keys[0]
	c = Claims{KeyID: key.id, Nonce: nonce, Expires: time.Unix(exp.Unix(), 0)}
	var expBuf [13]byte
	expStr := strconv.AppendInt(expBuf[:0], exp.Unix(), 36)
	var mac [macLen]byte
	key.mac(&mac, sale, user, nonce, string(expStr), jkt)
	version := Version
	if jkt != "" {
		version = BoundVersion
	}
	return version + "." + key.id + "." + string(expStr) + "." + nonce + "." + string(mac[:]), c, nil
}

// Verify checks a token presented by user for sale at time now: format, version, key id,
// signature (constant time), binding to sale and user, expiry. It touches no network and
// allocates nothing.
//
// now is the caller's clock. The expiry was decided from Redis time when the token was
// issued, so a gateway whose clock runs ahead of Redis refuses tokens that much early, and one
// running behind accepts them that much late; the exp in StoreValue lets the gate's script
// check expiry against Redis time as well.
func (k *Keyring) Verify(token, sale, user string, now time.Time) (Claims, error) {
	return k.VerifyBound(token, sale, user, "", now)
}

// Bound reports whether token claims to be bound to a device's key (version 2): it is then
// spent only with a proof, whose key's thumbprint VerifyBound is given.
func Bound(token string) bool { return strings.HasPrefix(token, BoundVersion+".") }

// VerifyBound is Verify for a token presented with a proof of the key of thumbprint jkt: a
// bound token verifies only with the thumbprint it was signed with, a bearer token (version
// 1) only with jkt "". A copy of a bound token spent with another key is ErrInvalid here.
func (k *Keyring) VerifyBound(token, sale, user, jkt string, now time.Time) (Claims, error) {
	var c Claims
	if len(token) > MaxLen || !contract.ValidID(sale) || !contract.ValidID(user) || len(jkt) > jktLen {
		return c, ErrInvalid
	}
	// <version>.<kid>.<exp>.<nonce>.<mac>, cut by hand: strings.Split would allocate on every
	// purchase.
	version := Version
	if jkt != "" {
		version = BoundVersion
	}
	rest, ok := strings.CutPrefix(token, version+".")
	if !ok {
		return c, ErrInvalid
	}
	kid, rest, _ := strings.Cut(rest, ".")
	expStr, rest, _ := strings.Cut(rest, ".")
	nonce, mac, _ := strings.Cut(rest, ".")
	key := k.key(kid)
	if key == nil || len(expStr) == 0 || len(expStr) > 13 || !ValidNonce(nonce) || len(mac) != macLen {
		return c, ErrInvalid
	}
	var want [macLen]byte
	key.mac(&want, sale, user, nonce, expStr, jkt)
	if subtle.ConstantTimeCompare(want[:], []byte(mac)) != 1 {
		return c, ErrInvalid
	}
	exp, err := strconv.ParseInt(expStr, 36, 64)
	if err != nil || exp <= 0 {
		return c, ErrInvalid
	}
	c = Claims{KeyID: key.id, Nonce: nonce, Expires: time.Unix(exp, 0)}
	if !now.Before(c.Expires) {
		return c, ErrExpired
	}
	return c, nil
}

// ValidNonce reports whether s has the nonce's length and only base64url characters (the MAC
// covers it; this keeps ':' and '.' out of the store value and the token). The waiting room's
// challenges carry nonces of the same form.
func ValidNonce(s string) bool {
	if len(s) != NonceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// mac writes the base64url HMAC-SHA256 of (kid, sale, user, nonce, exp) into dst. It is
// HMAC as RFC 2104 defines it, H(K^opad || H(K^ipad || m)), computed with the precomputed pads
// in stack buffers; a test checks it against crypto/hmac. NUL separators: ids, nonces and exps
// cannot contain NUL, so no two tuples share a MAC input. Callers bound every part's length.
// A bound token's thumbprint jkt comes last, under a domain of its own.
func (key *ringKey) mac(dst *[macLen]byte, sale, user, nonce, exp, jkt string) {
	var in [blockSize + maxMsg]byte
	n := copy(in[:], key.ipad[:])
	if jkt == "" {
		n += copy(in[n:], macDomain)
	} else {
		n += copy(in[n:], boundMacDomain)
	}
	n += copy(in[n:], key.id)
	in[n] = 0
	n++
	n += copy(in[n:], sale)
	in[n] = 0
	n++
	n += copy(in[n:], user)
	in[n] = 0
	n++
	n += copy(in[n:], nonce)
	in[n] = 0
	n++
	n += copy(in[n:], exp)
	if jkt != "" {
		in[n] = 0
		n++
		n += copy(in[n:], jkt)
	}
	inner := sha256.Sum256(in[:n])

	var out [blockSize + sha256.Size]byte
	copy(out[:], key.opad[:])
	copy(out[blockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	base64.RawURLEncoding.Encode(dst[:], sum[:])
}

// StoreValue is the value the issuer writes in the sale's tokens hash under the user's field,
// and that the gate script compares: "<nonce>:<exp unix ms>".
func StoreValue(c Claims) string {
	return c.Nonce + ":" + strconv.FormatInt(c.Expires.UnixMilli(), 10)
}
