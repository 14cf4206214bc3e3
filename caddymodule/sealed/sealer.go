// Package sealed holds the values the gateway seals with its token keys and hands to clients:
// the waiting room's tickets, the proof-of-work challenges of the room and the draw, the proof
// of work itself (its check and a solver), the difficulty a rate asks for, and the challenge
// issue step with its bounds on open challenges (issue.go). The room (caddymodule/room) and the
// draw (caddymodule/draw) both use it; it links no Caddy, so their cores and tests can too.
package sealed

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/seckilledge/seckill/contract"
)

// Key is one signing key: the token keyring's secrets (token_keys of the seckill app), used
// under the sealed values' own domain strings so a ticket or challenge is never a valid
// purchase token, nor the reverse.
type Key struct {
	ID     string
	Secret []byte
}

// Sealer signs tickets and challenges with the first key and verifies with any of them, so
// keys rotate as the purchase tokens' do.
type Sealer struct {
	keys []Key
}

// NewSealer checks the keys: ids of 1 to 16 characters of [A-Za-z0-9_-], secrets of at least
// 32 bytes.
func NewSealer(keys ...Key) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("no signing key (set token_keys in the seckill global option)")
	}
	for _, k := range keys {
		if len(k.ID) > 16 || !contract.ValidID(k.ID) {
			return nil, fmt.Errorf("key id %q: 1 to 16 characters of [A-Za-z0-9_-]", k.ID)
		}
		if len(k.Secret) < 32 {
			return nil, fmt.Errorf("key %q: secret shorter than 32 bytes", k.ID)
		}
	}
	return &Sealer{keys: keys}, nil
}

const macLen = 43 // 32 bytes in unpadded base64url

// Domain strings: each kind of sealed string has its own, and neither is the purchase
// token's ("seckill-token\x00...").
const (
	domainTicket    = "seckill-room-ticket\x00"
	domainChallenge = "seckill-room-challenge\x00"
	// A placed ticket (r2) carries one more part, under its own domain.
	domainPlacedTicket = "seckill-room-ticket-placed\x00"
	// A ticket bound to a device's key (BindTicket) is sealed again under its own domain.
	domainBoundTicket = "seckill-room-ticket-bound\x00"
)

// mac is base64url(HMAC-SHA256(secret, domain || kid || 0 || part0 || 0 || part1 ...)). Parts
// never contain NUL (ids, digits, base64url), so no two tuples share an input.
func mac(secret []byte, domain, kid string, parts ...string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(domain))
	m.Write([]byte(kid))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Sealer) sign(domain string, parts ...string) (kid, sum string) {
	k := s.keys[0]
	return k.ID, mac(k.Secret, domain, k.ID, parts...)
}

// check reports whether sum is the MAC of parts under the key kid (constant time).
func (s *Sealer) check(domain, kid, sum string, parts ...string) bool {
	if len(sum) != macLen {
		return false
	}
	for _, k := range s.keys {
		if k.ID == kid {
			want := mac(k.Secret, domain, kid, parts...)
			return subtle.ConstantTimeCompare([]byte(want), []byte(sum)) == 1
		}
	}
	return false
}
