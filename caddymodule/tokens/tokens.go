// Package tokens is the one-time purchase token: its format, signing and verification. It is
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
// Single use is not decided here: the issuer records the nonce in the sale's `tokens` hash
// (field user id, value StoreValue(nonce, exp)) and the gate's Lua script deletes it atomically
// with the purchase.
package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Version is the token format version this package issues.
const Version = "1"

// Verification errors. ErrInvalid covers every forged, malformed, foreign or unknown-key token:
// a client learns nothing from finer distinctions.
var (
	ErrInvalid = errors.New("invalid purchase token")
	ErrExpired = errors.New("purchase token expired")
)

// MinKeyLen is the shortest secret accepted for a signing key (bytes).
const MinKeyLen = 32

// Key is one HMAC key with its id.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring holds the keys tokens are verified with; the first one signs new tokens.
type Keyring struct {
	keys []Key
}

// NewKeyring checks and returns a keyring. Key ids are 1 to 16 characters of [A-Za-z0-9_-],
// unique; secrets are at least MinKeyLen bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("tokens: no signing key configured")
	}
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
	}
	return &Keyring{keys: append([]Key(nil), keys...)}, nil
}

func validKID(s string) bool {
	if len(s) == 0 || len(s) > 16 {
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

func (k *Keyring) key(id string) []byte {
	for _, key := range k.keys {
		if key.ID == id {
			return key.Secret
		}
	}
	return nil
}

// Claims is what a verified token says.
type Claims struct {
	KeyID   string
	Nonce   string
	Expires time.Time
}

// Issue makes a fresh token for (sale, user) expiring at exp, signed with the first key.
func (k *Keyring) Issue(sale, user string, exp time.Time) (token string, c Claims, err error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", c, err
	}
	key := k.keys[0]
	c = Claims{KeyID: key.ID, Nonce: base64.RawURLEncoding.EncodeToString(raw[:]), Expires: time.Unix(exp.Unix(), 0)}
	expStr := strconv.FormatInt(exp.Unix(), 36)
	mac := sign(key.Secret, key.ID, sale, user, c.Nonce, expStr)
	return Version + "." + key.ID + "." + expStr + "." + c.Nonce + "." + mac, c, nil
}

// Verify checks a token presented by user for sale at time now: format, version, key id,
// signature (constant time), binding to sale and user, expiry. It touches no network.
func (k *Keyring) Verify(token, sale, user string, now time.Time) (Claims, error) {
	var c Claims
	if len(token) > 160 {
		return c, ErrInvalid
	}
	parts := strings.Split(token, ".")
	if len(parts) != 5 || parts[0] != Version {
		return c, ErrInvalid
	}
	kid, expStr, nonce, mac := parts[1], parts[2], parts[3], parts[4]
	secret := k.key(kid)
	if secret == nil || len(nonce) != 22 || len(mac) != 43 {
		return c, ErrInvalid
	}
	if _, err := base64.RawURLEncoding.DecodeString(nonce); err != nil {
		return c, ErrInvalid
	}
	want := sign(secret, kid, sale, user, nonce, expStr)
	if !hmac.Equal([]byte(mac), []byte(want)) {
		return c, ErrInvalid
	}
	exp, err := strconv.ParseInt(expStr, 36, 64)
	if err != nil || exp <= 0 {
		return c, ErrInvalid
	}
	c = Claims{KeyID: kid, Nonce: nonce, Expires: time.Unix(exp, 0)}
	if !now.Before(c.Expires) {
		return c, ErrExpired
	}
	return c, nil
}

func sign(secret []byte, kid, sale, user, nonce, exp string) string {
	m := hmac.New(sha256.New, secret)
	// NUL separators: ids cannot contain NUL, so no two tuples share a MAC input.
	m.Write([]byte("seckill-token\x00" + Version + "\x00" + kid + "\x00" + sale + "\x00" + user + "\x00" + nonce + "\x00" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// StoreValue is the value the issuer writes in the sale's tokens hash under the user's field,
// and that the gate script compares: "<nonce>:<exp unix ms>".
func StoreValue(c Claims) string {
	return c.Nonce + ":" + strconv.FormatInt(c.Expires.UnixMilli(), 10)
}
