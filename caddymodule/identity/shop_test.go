package identity

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

	"github.com/caddyserver/caddy/v2"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
)

// testShop is a shop that signs its sessions and publishes its public keys at /jwks.json, as
// DESIGN's "Identity" asks of a production shop. The test can rotate keys, take the endpoint
// down and count fetches.
type testShop struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]testKey // published, by kid
	down atomic.Bool        // the JWKS endpoint answers 503
	hits atomic.Int64       // JWKS fetches served or refused
}

// testKey is a private key with its pinned algorithm.
type testKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer // nil for HS256
	hmac []byte
}

const (
	testIssuer   = "https://shop.test"
	testAudience = "seckill"
)

func newTestShop(t *testing.T) *testShop {
	s := &testShop{t: t, keys: map[string]testKey{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		s.hits.Add(1)
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(s.jwks())
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *testShop) url() string { return s.srv.URL + "/jwks.json" }

// jwks is the published document.
func (s *testShop) jwks() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range s.keys {
		var pub any = k.hmac // a secret published by mistake: the gateway must not use it
		if k.priv != nil {
			pub = k.priv.Public()
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: pub, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// newKey makes a key pair of alg (ES256, RS256, EdDSA) or an HS256 secret.
func newKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) testKey {
	k := testKey{kid: kid, alg: alg}
	var err error
	switch alg {
	case jose.ES256:
		k.priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		k.priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, k.priv, err = ed25519.GenerateKey(rand.Reader)
	case jose.HS256:
		k.hmac = make([]byte, 32)
		_, err = rand.Read(k.hmac)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// publish adds k to the JWKS.
func (s *testShop) publish(k testKey) testKey {
	s.mu.Lock()
	s.keys[k.kid] = k
	s.mu.Unlock()
	return k
}

// unpublish drops a key from the JWKS.
func (s *testShop) unpublish(kid string) {
	s.mu.Lock()
	delete(s.keys, kid)
	s.mu.Unlock()
}

// pemOf is the PEM public key of k (for a static key).
func pemOf(t testing.TB, k testKey) string {
	der, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// claims are a session's claims; the zero fields are filled by session.
type claims struct {
	jwt.Claims
	Extra map[string]any
}

// session signs a session of user valid for an hour from now.
func session(t testing.TB, k testKey, user string) string {
	now := time.Now()
	return sign(t, k, claims{Claims: jwt.Claims{
		Issuer: testIssuer, Audience: jwt.Audience{testAudience}, Subject: user,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
	}})
}

// sign signs c with k, its kid in the header.
func sign(t testing.TB, k testKey, c claims) string {
	var key any = k.priv
	if k.alg == jose.HS256 {
		key = k.hmac
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), k.kid))
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

var nopLogger = zap.NewNop()

// counter reads a counter's value.
func counter(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func caddyDuration(d time.Duration) caddy.Duration { return caddy.Duration(d) }
