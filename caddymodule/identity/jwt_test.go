package identity

import (
	"context"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

var nopLogger = zap.NewNop()

func caddyDuration(d time.Duration) caddy.Duration { return caddy.Duration(d) }

// expect checks that v answers token with want, and names alice exactly when it verifies.
func expect(t *testing.T, v *core.Verifier, name, token string, want core.Outcome) {
	t.Helper()
	user, got := v.Verify(context.Background(), token)
	if got != want {
		t.Errorf("%s: %s (user %q), want %s", name, got, user, want)
	}
	if (got == core.Verified) != (user == "alice") {
		t.Errorf("%s: %s names user %q", name, got, user)
	}
}

// A config reload joins the fetcher of the same URL: no new fetch, and the keys survive even
// when the endpoint is down during the reload.
func TestAReloadKeepsTheJWKSFetcherAndItsKeys(t *testing.T) {
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	cfg := func() *JWT {
		p := &JWT{JWKSURL: shop.URL(), Issuer: shoptest.Issuer, Audience: shoptest.Audience}
		if err := p.setup(p.pooledJWKS); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := cfg()
	expect(t, first.verifier, "first config", shoptest.Session(t, k1, "alice"), core.Verified)

	shop.Down.Store(true)
	second := cfg() // the new config is provisioned before the old one is cleaned up
	if err := first.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if second.jwks != first.jwks {
		t.Fatal("the reload started a second fetcher for the same URL")
	}
	expect(t, second.verifier, "after the reload, endpoint down", shoptest.Session(t, k1, "alice"), core.Verified)
	if n := shop.Hits.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	if err := second.Cleanup(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.jwks.Done():
	default:
		t.Fatal("the fetcher still runs after the last config using it was cleaned up")
	}
}

// Plain http to anything but this machine is refused unless
// jwks_allow_http says otherwise.
func TestAPlainHTTPJWKSOffLoopbackIsRefusedUnlessAllowed(t *testing.T) {
	for _, c := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"https://shop.example/.well-known/jwks.json", false, true},
		{"http://127.0.0.1:3000/.well-known/jwks.json", false, true},
		{"http://127.9.9.9:3000/jwks.json", false, true},
		{"http://localhost:3000/jwks.json", false, true},
		{"http://[::1]:3000/jwks.json", false, true},
		{"http://[::ffff:127.0.0.1]:3000/jwks.json", false, true},
		{"http://shop.example/.well-known/jwks.json", false, false},
		{"http://10.0.0.5/jwks.json", false, false},
		{"http://127.0.0.1.nip.io/jwks.json", false, false},
		{"http://localhost.evil.example/jwks.json", false, false},
		{"http://shop.example/.well-known/jwks.json", true, true},
	} {
		p := &JWT{JWKSURL: c.url, JWKSAllowHTTP: c.allow}
		err := p.setup(func(string) (*core.JWKS, error) { return nil, nil })
		if (err == nil) != c.ok {
			t.Errorf("%s (allow %v): %v", c.url, c.allow, err)
		}
	}
}

func TestTheVerifiedCacheIsOnByDefaultAndZeroTurnsItOff(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	cfg := func(n *int) *JWT {
		p := &JWT{Keys: []StaticKey{{ID: "k1", Algorithm: "ES256", Value: shoptest.PEM(t, k)}}, VerifiedCache: n}
		if err := p.setup(nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := cfg(nil)
	if err := p.Validate(); err != nil || p.verifier.Cache == nil || *p.VerifiedCache != core.DefaultVerifiedCache {
		t.Fatalf("default: %v, cache %v, verified_cache %d", err, p.verifier.Cache != nil, *p.VerifiedCache)
	}
	zero, negative := 0, -1
	if p := cfg(&zero); p.Validate() != nil || p.verifier.Cache != nil {
		t.Fatal("verified_cache 0 must turn the cache off")
	}
	if cfg(&negative).Validate() == nil {
		t.Fatal("verified_cache -1 accepted")
	}
}
