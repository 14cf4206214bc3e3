package core

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// The algorithms a session may be signed with. Anything else (none, HS384, PS256, ...) is
// refused by go-jose before a key is looked at.
var algorithms = []jose.SignatureAlgorithm{jose.HS256, jose.RS256, jose.ES256, jose.EdDSA}

// minHMACKey is the shortest HS256 secret accepted: RFC 7518 3.2 asks for a key at least as
// long as the hash output.
const minHMACKey = 32

// minRSABits is the smallest RSA modulus accepted.
const minRSABits = 2048

// Key is one verification key with its algorithm pinned: a token naming this key's kid must
// also name this algorithm. That pin is what stops algorithm confusion: an HS256 token "signed"
// with the bytes of an RSA public key names an RS256 key and is refused before any MAC is
// computed.
type Key struct {
	ID  string
	Alg jose.SignatureAlgorithm
	// Verifier is what go-jose verifies with: []byte (HS256), *rsa.PublicKey (RS256),
	// *ecdsa.PublicKey on P-256 (ES256) or ed25519.PublicKey (EdDSA).
	Verifier any
}

// KeySet is a set of keys by kid. It is never modified once built: a refresh builds a new one
// and swaps it in, so requests read it without a lock.
type KeySet map[string]*Key

// keepUnchanged returns next with each key that old holds unchanged (same kid, algorithm and
// material) replaced by old's *Key. A JWKS refresh that changes nothing then changes no *Key,
// and the sessions cached with a key (verified.go) stay usable until that key is dropped or
// replaced.
func keepUnchanged(old, next KeySet) KeySet {
	for kid, k := range next {
		if o := old[kid]; o != nil && o.Alg == k.Alg && sameMaterial(o.Verifier, k.Verifier) {
			next[kid] = o
		}
	}
	return next
}

// sameMaterial tells whether two verification keys are the same key.
func sameMaterial(a, b any) bool {
	if a, ok := a.([]byte); ok {
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	}
	// *rsa.PublicKey, *ecdsa.PublicKey and ed25519.PublicKey all have Equal.
	if a, ok := a.(interface{ Equal(crypto.PublicKey) bool }); ok {
		return a.Equal(b)
	}
	return false
}

// ParseStaticKey turns a configured key (its value already replaced) into a Key.
func ParseStaticKey(id, alg, value string) (*Key, error) {
	a := jose.SignatureAlgorithm(alg)
	if !allowed(a) {
		return nil, fmt.Errorf("key %q: algorithm %q: want one of HS256, RS256, ES256, EdDSA", id, alg)
	}
	if value == "" {
		return nil, fmt.Errorf("key %q: empty value (is its environment variable set?)", id)
	}
	if a == jose.HS256 {
		if len(value) < minHMACKey {
			return nil, fmt.Errorf("key %q: an HS256 secret of %d bytes; at least %d", id, len(value), minHMACKey)
		}
		return &Key{ID: id, Alg: a, Verifier: []byte(value)}, nil
	}
	if !strings.Contains(value, "\n") && strings.Contains(value, `\n`) {
		// A PEM squeezed onto one line with literal \n, as .env files and CI secrets often
		// hold it.
		value = strings.ReplaceAll(value, `\n`, "\n")
	}
	block, _ := pem.Decode([]byte(value))
	if block == nil {
		return nil, fmt.Errorf("key %q: %s needs a PEM public key", id, alg)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", id, err)
	}
	return pinKey(id, a, pub)
}

// pinKey pins alg to a public key after checking they go together.
func pinKey(id string, alg jose.SignatureAlgorithm, pub any) (*Key, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if alg != jose.RS256 {
			break
		}
		if k.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("key %q: RSA key of %d bits; at least %d", id, k.N.BitLen(), minRSABits)
		}
		return &Key{ID: id, Alg: alg, Verifier: k}, nil
	case *ecdsa.PublicKey:
		if alg != jose.ES256 {
			break
		}
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("key %q: ES256 needs a P-256 key", id)
		}
		return &Key{ID: id, Alg: alg, Verifier: k}, nil
	case ed25519.PublicKey:
		if alg == jose.EdDSA {
			return &Key{ID: id, Alg: alg, Verifier: k}, nil
		}
	}
	return nil, fmt.Errorf("key %q: a %T cannot verify %s", id, pub, alg)
}

func allowed(a jose.SignatureAlgorithm) bool {
	for _, b := range algorithms {
		if a == b {
			return true
		}
	}
	return false
}

// maxJWKS is the largest JWKS document read: a few keys take a few KiB.
const maxJWKS = 1 << 20

// parseJWKS reads a JWKS document (RFC 7517). Keys that cannot verify a session are skipped
// and reported in skipped (encryption keys, secrets, private keys, unknown types or
// algorithms), so one odd key published next to ours does not take the set down; a document
// with no usable key is an error, so the last good set stays in use.
func parseJWKS(doc []byte) (ks KeySet, skipped []string, err error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, nil, fmt.Errorf("JWKS: %w", err)
	}
	ks = KeySet{}
	for i, r := range raw.Keys {
		k, err := parseJWK(r)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		if _, dup := ks[k.ID]; dup {
			skipped = append(skipped, fmt.Sprintf("key %d: kid %q again (the first is used)", i, k.ID))
			continue
		}
		ks[k.ID] = k
	}
	if len(ks) == 0 {
		return nil, skipped, errors.New("JWKS: no usable signature key")
	}
	return ks, skipped, nil
}

// parseJWK reads one JWK. Its alg pins the algorithm; a key without alg gets the one its type
// implies (RSA: RS256, EC P-256: ES256, OKP Ed25519: EdDSA). Symmetric keys are refused: a
// secret has no business in a published document.
func parseJWK(r json.RawMessage) (*Key, error) {
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(r); err != nil {
		return nil, err
	}
	if k.Use != "" && k.Use != "sig" {
		return nil, fmt.Errorf("kid %q: use %q", k.KeyID, k.Use)
	}
	if !k.Valid() {
		return nil, fmt.Errorf("kid %q: invalid key", k.KeyID)
	}
	if !k.IsPublic() {
		return nil, fmt.Errorf("kid %q: not a public key", k.KeyID)
	}
	alg := jose.SignatureAlgorithm(k.Algorithm)
	if alg == "" {
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			alg = jose.RS256
		case *ecdsa.PublicKey:
			alg = jose.ES256
		case ed25519.PublicKey:
			alg = jose.EdDSA
		default:
			return nil, fmt.Errorf("kid %q: key type %T", k.KeyID, pub)
		}
	}
	if !allowed(alg) || alg == jose.HS256 {
		return nil, fmt.Errorf("kid %q: algorithm %q", k.KeyID, alg)
	}
	return pinKey(k.KeyID, alg, k.Key)
}
