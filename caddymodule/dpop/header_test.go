package dpop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// header is the base64url protected header of a proof by a fresh P-256 key, with its members
// as given (the jwk's x and y filled in), and the key.
func header(t *testing.T, members map[string]any) (string, *ecdsa.PrivateKey) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := priv.PublicKey.Bytes() // 0x04 || x || y
	if err != nil {
		t.Fatal(err)
	}
	jwk := map[string]any{"kty": "EC", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:])}
	h := map[string]any{"alg": "ES256", "typ": Type, "jwk": jwk}
	for k, v := range members {
		if v == nil {
			delete(h, k)
			continue
		}
		h[k] = v
	}
	if extra, ok := members["jwk+"].(map[string]any); ok {
		delete(h, "jwk+")
		for k, v := range extra {
			jwk[k] = v
		}
	}
	raw, _ := json.Marshal(h)
	return base64.RawURLEncoding.EncodeToString(raw), priv
}

// A header is kept only when it checks: the algorithm, the type, a public P-256 key on the
// curve and no extension; member names are JOSE's, matched exactly.
func TestAProofHeaderIsKeptOnlyWhenItChecks(t *testing.T) {
	for _, c := range []struct {
		name    string
		members map[string]any
		ok      bool
	}{
		{"genuine", nil, true},
		{"another alg", map[string]any{"alg": "ES384"}, false},
		{"alg none", map[string]any{"alg": "none"}, false},
		{"alg in capitals only", map[string]any{"alg": nil, "ALG": "ES256"}, false},
		{"another typ", map[string]any{"typ": "JWT"}, false},
		{"no typ", map[string]any{"typ": nil}, false},
		{"a crit extension", map[string]any{"crit": []string{"exp"}}, false},
		{"no jwk", map[string]any{"jwk": nil}, false},
		{"a private key", map[string]any{"jwk+": map[string]any{"d": "AAAA"}}, false},
		{"another curve", map[string]any{"jwk+": map[string]any{"crv": "P-384"}}, false},
		{"an RSA key", map[string]any{"jwk+": map[string]any{"kty": "RSA"}}, false},
		{"x too short", map[string]any{"jwk+": map[string]any{"x": "AAAA"}}, false},
		{"a point off the curve", map[string]any{"jwk+": map[string]any{"y": base64.RawURLEncoding.EncodeToString(make([]byte, 32))}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			head, _ := header(t, c.members)
			cache := headerCache{max: 4}
			k, err := cache.of(head)
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
			if c.ok && (k.pub == nil || !ValidJKT(k.jkt)) {
				t.Fatalf("a checked header gave %+v", k)
			}
			if want := map[bool]int{true: 1, false: 0}[c.ok]; cache.len() != want {
				t.Fatalf("%d headers kept, want %d", cache.len(), want)
			}
		})
	}
}

// The parsed headers are bounded: past the bound the cache starts again, and a header seen
// before is its parse's answer, the same key.
func TestTheParsedHeadersStayBounded(t *testing.T) {
	cache := headerCache{max: 64}
	first, _ := header(t, nil)
	k1, err := cache.of(first)
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := cache.of(first); k2.pub != k1.pub {
		t.Fatal("a header seen before was parsed again")
	}
	for range 3 * cache.max {
		h, _ := header(t, nil)
		if _, err := cache.of(h); err != nil {
			t.Fatal(err)
		}
		if cache.len() > cache.max {
			t.Fatalf("%d headers kept, more than %d", cache.len(), cache.max)
		}
	}
	if maxHeaderKeys != 16384 || headerKeys.max != maxHeaderKeys {
		t.Fatalf("the gateway's bound is %d (%d), want 16384", headerKeys.max, maxHeaderKeys)
	}
}
