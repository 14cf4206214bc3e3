package identity

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

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
	return base
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
	shop := newTestShop(t)
	key := shop.publish(newKey(t, "k1", jose.ES256))
	t.Setenv("IDENTITY_TEST_JWKS", shop.url())
	base := startGateway(t, shopCaddyfile)

	// The cookie and the bearer header both carry a session.
	tok := session(t, key, "alice")
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
	forger := newKey(t, "k1", jose.ES256)
	for name, bad := range map[string]string{
		"forged":  session(t, forger, "alice"),
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
	if r := get(t, plainBase, "/plain/x", http.Header{"Authorization": {"Bearer " + session(t, forger, "alice")}}, ""); r.Status != http.StatusUnauthorized {
		t.Fatalf("plain site block, forged: %d %q", r.Status, r.Body)
	}

	// No session at all, whatever the client claims.
	if r := get(t, base, "/seckill/s1/token", http.Header{"X-User-Id": {"alice"}}, ""); r.Status != http.StatusUnauthorized || r.Code != "unauthenticated" {
		t.Errorf("no session: %d %s", r.Status, r.Body)
	}
}
