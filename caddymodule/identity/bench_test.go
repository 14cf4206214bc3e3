package identity

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// What one admitted request costs the gateway: the lead's benchmark compares it with the old
// forward_auth round trip. go test -run '^$' -bench Identity -benchmem ./caddymodule/identity
// With the default verified_cache the session is checked once and then answered from the
// cache; BenchmarkIdentityVerifiesEverySessionWithoutTheCache is the cost of a full check.
func BenchmarkIdentityVerifiesASignedSession(b *testing.B) {
	benchIdentity(b, nil)
}

// verified_cache 0: every request's signature is checked (the cost of a cache miss).
func BenchmarkIdentityVerifiesEverySessionWithoutTheCache(b *testing.B) {
	off := 0
	benchIdentity(b, &off)
}

func benchIdentity(b *testing.B, verifiedCache *int) {
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA, jose.RS256, jose.HS256} {
		b.Run(string(alg), func(b *testing.B) {
			k := shoptest.NewKey(b, "k1", alg)
			// The configured value goes through Caddy's replacer: random bytes with a '{' and
			// a '}' would lose a "placeholder" and fail every request. Printable, as shops
			// keep it.
			k.HMAC = []byte(base64.RawURLEncoding.EncodeToString(k.HMAC))
			value := string(k.HMAC)
			if k.Priv != nil {
				value = shoptest.PEM(b, k)
			}
			h := &Identity{JWT: JWT{Cookie: "session", Issuer: shoptest.Issuer, Audience: shoptest.Audience,
				Keys: []StaticKey{{ID: "k1", Algorithm: string(alg), Value: value}}, VerifiedCache: verifiedCache}}
			if err := h.setup(nil); err != nil {
				b.Fatal(err)
			}
			benchHandler(b, h, "session="+shoptest.Session(b, k, "alice"))
		})
	}
}

func BenchmarkSessionCacheHit(b *testing.B) {
	h := &Session{Upstream: "http://127.0.0.1:1/session", Cookie: "session"}
	if err := h.setup(nil); err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/seckill/s1/token", nil)
	r.Header.Set("Cookie", "session=opaque-session-id-0123456789")
	k, _ := h.credentialKey(r)
	h.cache.Put(k, core.Answer{User: "alice", Expires: h.now().Add(3600e9)})
	benchHandler(b, h, "session=opaque-session-id-0123456789")
}

func benchHandler(b *testing.B, h caddyhttp.MiddlewareHandler, cookie string) {
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		repl := caddy.NewReplacer()
		r := httptest.NewRequest(http.MethodPost, "/seckill/s1/token", nil)
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		for pb.Next() {
			r.Header.Set("Cookie", cookie)
			if err := h.ServeHTTP(w, r, next); err != nil || w.Code != http.StatusOK {
				b.Fatalf("%v %d %s", err, w.Code, w.Body)
			}
		}
	})
}
