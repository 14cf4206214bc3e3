// Package dpoptest makes DPoP proofs for tests and benchmarks, as a page's client does
// (clients/js/seckill.js): a P-256 key, and proofs signed with go-jose (typ dpop+jwt, ES256,
// the public key embedded). It is imported by tests only.
package dpoptest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/dpop"
)

// Key is one device's key.
type Key struct {
	Priv *ecdsa.PrivateKey
	// JKT is the key's RFC 7638 thumbprint, as dpop.Check reports it.
	JKT    string
	signer jose.Signer
}

// NewKey makes a fresh P-256 key.
func NewKey(t testing.TB) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return FromPrivate(t, priv)
}

// FixedKey is RFC 7517 appendix A.2's P-256 key: the same in every run (a fuzz corpus of its
// proofs stays valid), and public, so never a real device's.
func FixedKey(t testing.TB) *Key {
	t.Helper()
	var k jose.JSONWebKey
	err := k.UnmarshalJSON([]byte(`{"kty":"EC","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM","d":"870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE"}`))
	if err != nil {
		t.Fatal(err)
	}
	return FromPrivate(t, k.Key.(*ecdsa.PrivateKey))
}

// FromPrivate is the Key of priv.
func FromPrivate(t testing.TB, priv *ecdsa.PrivateKey) *Key {
	t.Helper()
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(dpop.Type)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: &priv.PublicKey}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Priv: priv, JKT: base64.RawURLEncoding.EncodeToString(tp), signer: s}
}

// Claims are a proof's claims; zero fields are left out (Proof fills iat and jti).
type Claims struct {
	HTM string `json:"htm,omitempty"`
	HTU string `json:"htu,omitempty"`
	IAT int64  `json:"iat,omitempty"`
	JTI string `json:"jti,omitempty"`
	ATH string `json:"ath,omitempty"`
}

// Proof signs a proof for method and url over token ("" for none), issued now, with a
// fresh jti.
func (k *Key) Proof(t testing.TB, method, url, token string) string {
	t.Helper()
	c := Claims{HTM: method, HTU: url, IAT: time.Now().Unix(), JTI: NewJTI(t)}
	if token != "" {
		c.ATH = dpop.TokenHash(token)
	}
	return k.Sign(t, c)
}

// Sign signs c as it is (a test's own claims: old, for another URL, a jti of its choosing).
func (k *Key) Sign(t testing.TB, c Claims) string {
	t.Helper()
	b, _ := json.Marshal(c)
	return k.SignPayload(t, b)
}

// SignPayload signs any payload with the key's header.
func (k *Key) SignPayload(t testing.TB, payload []byte) string {
	t.Helper()
	jws, err := k.signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// NewJTI is 16 random bytes, base64url.
func NewJTI(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
