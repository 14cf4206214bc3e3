// Package shoptest is a shop for the identity tests: it signs sessions with keys of every
// supported algorithm and publishes their public halves as a JWKS, which a test can rotate or
// take down. Both the verifier's core and the Caddy handlers are tested against it.
package shoptest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Shop signs its sessions and publishes its public keys at /jwks.json, as
// DESIGN's "Identity" asks of a production shop. The test can rotate keys, take the endpoint
// down and count fetches.
type Shop struct {
	t    *testing.T
	Srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]Key // published, by kid
	Down atomic.Bool    // the JWKS endpoint answers 503
	Hits atomic.Int64   // JWKS fetches served or refused
}

// Key is a private key with its pinned algorithm.
type Key struct {
	Kid  string
	Alg  jose.SignatureAlgorithm
	Priv crypto.Signer // nil for HS256
	HMAC []byte
}

// The iss and aud of the shop's sessions.
const (
	Issuer   = "https://shop.test"
	Audience = "seckill"
)

// NewShop starts the shop's JWKS endpoint, closed when the test ends.
func NewShop(t *testing.T) *Shop {
	s := &Shop{t: t, keys: map[string]Key{}}
	s.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		s.Hits.Add(1)
		if s.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(s.JWKS())
	}))
	t.Cleanup(s.Srv.Close)
	return s
}

// URL is where the JWKS is published.
func (s *Shop) URL() string { return s.Srv.URL + "/jwks.json" }

// JWKS is the published document.
func (s *Shop) JWKS() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range s.keys {
		var pub any = k.HMAC // a secret published by mistake: the gateway must not use it
		if k.Priv != nil {
			pub = k.Priv.Public()
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: pub, KeyID: k.Kid, Algorithm: string(k.Alg), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// NewKey makes a key pair of alg (ES256, RS256, EdDSA) or an HS256 secret.
func NewKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) Key {
	k := Key{Kid: kid, Alg: alg}
	var err error
	switch alg {
	case jose.ES256:
		k.Priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		k.Priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, k.Priv, err = ed25519.GenerateKey(rand.Reader)
	case jose.HS256:
		k.HMAC = make([]byte, 32)
		_, err = rand.Read(k.HMAC)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Publish adds k to the JWKS.
func (s *Shop) Publish(k Key) Key {
	s.mu.Lock()
	s.keys[k.Kid] = k
	s.mu.Unlock()
	return k
}

// Unpublish drops a key from the JWKS.
func (s *Shop) Unpublish(kid string) {
	s.mu.Lock()
	delete(s.keys, kid)
	s.mu.Unlock()
}

// PEM is the PEM public key of k (for a static key).
func PEM(t testing.TB, k Key) string {
	der, err := x509.MarshalPKIXPublicKey(k.Priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// Claims are a session's claims; the zero fields are filled by Session.
type Claims struct {
	jwt.Claims
	Extra map[string]any
}

// Session signs a session of user valid for an hour from now.
func Session(t testing.TB, k Key, user string) string {
	return Sign(t, k, Claims{Claims: SessionClaims(user)})
}

// At is a session of alice issued at iat, valid until exp.
func At(t testing.TB, k Key, iat, exp time.Time) string {
	return Sign(t, k, Claims{Claims: jwt.Claims{Issuer: Issuer, Audience: jwt.Audience{Audience},
		Subject: "alice", IssuedAt: jwt.NewNumericDate(iat), Expiry: jwt.NewNumericDate(exp)}})
}

// SessionClaims are the claims of a session of user valid for an hour from now.
func SessionClaims(user string) jwt.Claims {
	now := time.Now()
	return jwt.Claims{Issuer: Issuer, Audience: jwt.Audience{Audience}, Subject: user,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
}

// Sign signs c with k, its kid in the header.
func Sign(t testing.TB, k Key, c Claims) string {
	var key any = k.Priv
	if k.Alg == jose.HS256 {
		key = k.HMAC
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Alg, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), k.Kid))
	if err != nil {
		t.Fatal(err)
	}
	b := jwt.Signed(sig).Claims(c.Claims)
	if c.Extra != nil {
		b = b.Claims(c.Extra)
	}
	tok, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Counter reads a counter's value.
func Counter(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// Clock is a clock a test moves by hand; safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock starts at the present.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }
