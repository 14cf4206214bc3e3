package identity

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy" // the backend behind the provider
	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// gatewayReply is one answer of the in-process gateway.
type gatewayReply struct {
	Status int
	Body   string
	Header http.Header
	Code   string
}

// startGateway runs caddyfile (adapted, {$VAR}s from the environment) in this process. The
// site answers /healthz itself.
func startGateway(t *testing.T, caddyfile string) string {
	base, _ := startReloadableGateway(t, caddyfile)
	return base
}

// startReloadableGateway is startGateway, and a function that loads the same config again
// (a config reload: every module is provisioned anew, the old ones cleaned up).
func startReloadableGateway(t *testing.T, caddyfile string) (string, func()) {
	t.Helper()
	port, plainPort := testenv.FreePort(t), testenv.FreePort(t)
	src := strings.ReplaceAll(caddyfile, "ADDR", fmt.Sprintf("http://127.0.0.1:%d", port))
	src = strings.ReplaceAll(src, "PLAIN", fmt.Sprintf("http://127.0.0.1:%d", plainPort))
	src = "{\n\tadmin off\n\tauto_https off\n\tlog {\n\t\tlevel " + handlertest.LogLevel() + "\n\t}\n}\n" + src
	cfg, _, err := handlertest.Adapt([]byte(src))
	if err != nil {
		t.Fatalf("adapt: %v\n%s", err, src)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	handlertest.StartCaddy(t, cfg, base)
	plainBase = fmt.Sprintf("http://127.0.0.1:%d", plainPort)
	return base, func() {
		t.Helper()
		if err := caddy.Load(cfg, true); err != nil {
			t.Fatalf("reload: %v", err)
		}
		// The old config's sockets close after Load returns (testenv.WaitListening).
		testenv.WaitListening(t, port, 1)
		testenv.WaitListening(t, plainPort, 1)
	}
}

// plainBase is the address of the PLAIN site of the last startGateway.
var plainBase string

var plainClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// get sends GET base+path with the given headers (several values of one header: several
// header lines) and an optional session cookie.
func get(t *testing.T, base, path string, hdr http.Header, cookie string) gatewayReply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "seckill_session", Value: cookie})
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := gatewayReply{Status: resp.StatusCode, Body: string(b), Header: resp.Header}
	var body struct{ Code string }
	if json.Unmarshal(b, &body) == nil {
		r.Code = body.Code
	}
	return r
}

// The shop helper's syntax, verbatim: a JWKS served by the shop, the cookie or a bearer token.
const shopCaddyfile = `
ADDR {
	route /seckill/* {
		seckill_identity {
			cookie   seckill_session                                   # cookie name; Authorization: Bearer is also read
			jwks_url {$IDENTITY_TEST_JWKS}
			issuer   https://shop.test
			audience seckill
			# user_claim sub   leeway 30s   jwks_refresh 5m  (optional, these defaults)
		}
		respond "user={http.auth.user.id} x-user-id={http.request.header.X-User-ID}" 200
	}
	handle /healthz {
		respond "ok" 200
	}
}

PLAIN {
	# A plain site block: the directive is ordered by RegisterDirectiveOrder.
	seckill_identity /plain/* {
		jwks_url {$IDENTITY_TEST_JWKS}
	}
	respond /plain/* "plain user={http.auth.user.id}" 200
}
`

func TestAShopSignedSessionIsVerifiedAtTheEdgeAndAForgedOneIsRefused(t *testing.T) {
	shop := shoptest.NewShop(t)
	key := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	t.Setenv("IDENTITY_TEST_JWKS", shop.URL())
	base := startGateway(t, shopCaddyfile)

	// The cookie and the bearer header both carry a session.
	tok := shoptest.Session(t, key, "alice")
	if r := get(t, base, "/seckill/s1/token", nil, tok); r.Status != http.StatusOK || !strings.Contains(r.Body, "user=alice ") {
		t.Fatalf("session cookie: %d %s", r.Status, r.Body)
	}
	if r := get(t, base, "/seckill/s1/token", http.Header{"Authorization": {"Bearer " + tok}}, ""); r.Status != http.StatusOK || !strings.Contains(r.Body, "user=alice ") {
		t.Fatalf("bearer token: %d %s", r.Status, r.Body)
	}

	// The client's own X-User-ID is not who it is, and does not travel on.
	r := get(t, base, "/seckill/s1/token", http.Header{"X-User-Id": {"mallory"}}, tok)
	if r.Status != http.StatusOK || r.Body != "user=alice x-user-id=" {
		t.Fatalf("a claimed X-User-ID: %d %q", r.Status, r.Body)
	}

	// A token signed by someone else's key with the shop's kid: 401 unauthenticated, JSON,
	// with a Bearer challenge.
	forger := shoptest.NewKey(t, "k1", jose.ES256)
	for name, bad := range map[string]string{
		"forged":  shoptest.Session(t, forger, "alice"),
		"garbage": "not-a-jwt",
	} {
		r := get(t, base, "/seckill/s1/token", nil, bad)
		if r.Status != http.StatusUnauthorized || r.Code != "unauthenticated" {
			t.Errorf("%s session: %d %s", name, r.Status, r.Body)
		}
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer ") || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s session: headers %v", name, r.Header)
		}
	}
	// In a plain site block too.
	if r := get(t, plainBase, "/plain/x", http.Header{"Authorization": {"Bearer " + tok}}, ""); r.Status != http.StatusOK || r.Body != "plain user=alice" {
		t.Fatalf("plain site block: %d %q", r.Status, r.Body)
	}
	if r := get(t, plainBase, "/plain/x", http.Header{"Authorization": {"Bearer " + shoptest.Session(t, forger, "alice")}}, ""); r.Status != http.StatusUnauthorized {
		t.Fatalf("plain site block, forged: %d %q", r.Status, r.Body)
	}

	// No session at all, whatever the client claims.
	if r := get(t, base, "/seckill/s1/token", http.Header{"X-User-Id": {"alice"}}, ""); r.Status != http.StatusUnauthorized || r.Code != "unauthenticated" {
		t.Errorf("no session: %d %s", r.Status, r.Body)
	}
}

// A gateway started while the shop's JWKS endpoint is down refuses with 503 unavailable (the
// buyer's session may be fine: signing in again would not help), then lets buyers in as soon
// as the endpoint answers.
func TestAGatewayStartedWithTheJWKSDownAnswers503UntilTheKeysLoad(t *testing.T) {
	shop := shoptest.NewShop(t)
	key := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	shop.Down.Store(true)
	t.Setenv("IDENTITY_TEST_JWKS", shop.URL())
	base := startGateway(t, shopCaddyfile)
	tok := shoptest.Session(t, key, "alice")

	r := get(t, base, "/seckill/s1/token", nil, tok)
	if r.Status != http.StatusServiceUnavailable || r.Code != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("JWKS down at start: %d %s (Retry-After %q)", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	shop.Down.Store(false)
	testenv.WaitFor(t, 10*time.Second, "the gateway to load the keys", func() bool {
		return get(t, base, "/seckill/s1/token", nil, tok).Status == http.StatusOK
	})
}

// A config reload while the JWKS endpoint is down: the pooled keys survive, buyers notice
// nothing, and the reload fetched nothing.
func TestAConfigReloadWhileTheJWKSIsDownKeepsTheKeys(t *testing.T) {
	shop := shoptest.NewShop(t)
	key := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	t.Setenv("IDENTITY_TEST_JWKS", shop.URL())
	base, reload := startReloadableGateway(t, shopCaddyfile)
	tok := shoptest.Session(t, key, "alice")
	if r := get(t, base, "/seckill/s1/token", nil, tok); r.Status != http.StatusOK {
		t.Fatalf("before the reload: %d %s", r.Status, r.Body)
	}
	hits := shop.Hits.Load()
	shop.Down.Store(true)
	reload()
	if r := get(t, base, "/seckill/s1/token", nil, tok); r.Status != http.StatusOK || !strings.Contains(r.Body, "user=alice ") {
		t.Fatalf("after the reload: %d %s", r.Status, r.Body)
	}
	if n := shop.Hits.Load(); n != hits {
		t.Fatalf("the reload fetched the JWKS again (%d fetches, %d before)", n, hits)
	}
}

// Keys from the environment: an HS256 secret and a PEM public key, read when the config loads
// ({env.*}), rotated by kid.
func TestStaticKeysFromTheEnvironmentVerifyByKid(t *testing.T) {
	hs, ed := shoptest.NewKey(t, "hs-1", jose.HS256), shoptest.NewKey(t, "ed-1", jose.EdDSA)
	// An environment variable cannot hold a NUL byte, which 32 random bytes hold one time in
	// eight (setenv: invalid argument): the secret as printable text, as shops keep it.
	hs.HMAC = []byte(base64.RawURLEncoding.EncodeToString(hs.HMAC))
	t.Setenv("IDENTITY_TEST_HS", string(hs.HMAC))
	t.Setenv("IDENTITY_TEST_ED", shoptest.PEM(t, ed))
	base := startGateway(t, `
ADDR {
	handle /healthz {
		respond "ok" 200
	}
	route {
		seckill_identity {
			key hs-1 HS256 {env.IDENTITY_TEST_HS}
			key ed-1 EdDSA {env.IDENTITY_TEST_ED}
			issuer https://shop.test
			audience seckill
		}
		respond "user={http.auth.user.id}" 200
	}
}
PLAIN {
	respond 404
}
`)
	for _, k := range []shoptest.Key{hs, ed} {
		if r := get(t, base, "/x", http.Header{"Authorization": {"Bearer " + shoptest.Session(t, k, "alice")}}, ""); r.Status != http.StatusOK || r.Body != "user=alice" {
			t.Errorf("%s: %d %s", k.Kid, r.Status, r.Body)
		}
	}
	// The HS256 secret under the EdDSA kid: pinned, refused.
	swapped := shoptest.Sign(t, shoptest.Key{Kid: "ed-1", Alg: jose.HS256, HMAC: hs.HMAC}, shoptest.Claims{Claims: shoptest.SessionClaims("alice")})
	if r := get(t, base, "/x", http.Header{"Authorization": {"Bearer " + swapped}}, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("HS256 under an EdDSA kid: %d %s", r.Status, r.Body)
	}
}

// Caddy's own authentication handler with the
// seckill_jwt provider in front of a reverse_proxy to a backend that reads the user header. A
// signed-in mallory who claims to be the victim reaches the backend with no claim left in any
// spelling.
func TestBehindCaddysAuthenticationHandlerAClaimedUserHeaderIsGone(t *testing.T) {
	shop := shoptest.NewShop(t)
	key := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "claims=%v", claimsLeft(r.Header, ""))
	}))
	t.Cleanup(backend.Close)
	port := testenv.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`{"admin": {"disabled": true}, "logging": {"logs": {"default": {"level": "ERROR"}}},
 "apps": {"http": {"servers": {"s": {"listen": ["127.0.0.1:%d"], "automatic_https": {"disable": true},
  "routes": [
   {"match": [{"path": ["/healthz"]}], "handle": [{"handler": "static_response", "body": "ok"}], "terminal": true},
   {"handle": [
    {"handler": "authentication", "providers": {"seckill_jwt": {"cookie": "seckill_session", "jwks_url": %q, "issuer": %q, "audience": %q}}},
    {"handler": "reverse_proxy", "upstreams": [{"dial": %q}]}
   ]}
  ]}}}}}`, port, shop.URL(), shoptest.Issuer, shoptest.Audience, strings.TrimPrefix(backend.URL, "http://"))
	handlertest.StartCaddy(t, []byte(cfg), base)
	for _, name := range claimedUserHeaders {
		req, _ := http.NewRequest(http.MethodGet, base+"/orders", nil)
		req.Header[name] = []string{"victim"}
		req.AddCookie(&http.Cookie{Name: "seckill_session", Value: shoptest.Session(t, key, "mallory")})
		resp, err := plainClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "claims=[]" {
			t.Errorf("%s: victim: %d %q", name, resp.StatusCode, b)
		}
	}
}
