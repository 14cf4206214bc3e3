package conformance_test

// The seckill_cors handler's own tests: it links Caddy in every part (its Provision, its
// Caddyfile, its ServeHTTP), so they live in this binary; its allow list is tested in
// caddymodule/cors/core, which links no Caddy.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/cors"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

func provisioned(t *testing.T, h *cors.CORS) *cors.CORS {
	t.Helper()
	if err := h.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	return h
}

// serve runs h in front of a handler that applies the edge's cross-site rule, as the room,
// the draw, the token issuer and the gate do; it reports whether that handler was reached.
func serve(h *cors.CORS, method, origin string, hdr map[string]string) (*httptest.ResponseRecorder, bool) {
	r := httptest.NewRequest(method, "https://edge.example/shop-api/drop/s1/buy", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{}))
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	reached := false
	_ = h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		reached = true
		if ref, ok := handler.CheckRequest(r); !ok {
			return handler.Writer{}.Write(w, ref)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}))
	return w, reached
}

func TestAListedOriginGetsItsPreflightAndBuysWithCredentials(t *testing.T) {
	h := provisioned(t, &cors.CORS{Origins: []string{"https://shop.example"}, Headers: []string{"X-User-ID"}})
	w, reached := serve(h, "OPTIONS", "https://shop.example", map[string]string{
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,dpop,x-seckill-token"})
	if reached || w.Code != http.StatusNoContent {
		t.Fatalf("preflight: %d (next reached %v), want 204 answered here", w.Code, reached)
	}
	for k, want := range map[string]string{
		"Access-Control-Allow-Origin": "https://shop.example", "Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Methods": "GET, POST, DELETE", "Access-Control-Max-Age": "600", "Vary": "Origin",
	} {
		if got := w.Header().Get(k); got != want {
			t.Errorf("preflight %s: %q, want %q", k, got, want)
		}
	}
	allowed := strings.ToLower(w.Header().Get("Access-Control-Allow-Headers"))
	for _, name := range []string{"content-type", "dpop", "x-seckill-token", "x-seckill-ticket", "x-seckill-challenge", "x-seckill-solution", "authorization", "x-user-id"} {
		if !strings.Contains(allowed, name) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", allowed, name)
		}
	}

	w, reached = serve(h, "POST", "https://shop.example", map[string]string{"Sec-Fetch-Site": "cross-site"})
	if !reached || w.Code != http.StatusAccepted {
		t.Fatalf("the purchase from the listed origin: %d (reached %v), want 202", w.Code, reached)
	}
	if w.Header().Get("Access-Control-Allow-Origin") != "https://shop.example" || w.Header().Get("Access-Control-Allow-Credentials") != "true" ||
		!strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("the purchase's CORS headers: %v", w.Header())
	}
}

func TestAnyOtherOriginKeepsTheCrossSiteRule(t *testing.T) {
	h := provisioned(t, &cors.CORS{Origins: []string{"https://shop.example"}})
	w, reached := serve(h, "OPTIONS", "https://evil.example", map[string]string{"Access-Control-Request-Method": "POST"})
	if reached || w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"cross_site"`) {
		t.Errorf("an unlisted preflight: %d %s (reached %v), want 403 cross_site here", w.Code, w.Body, reached)
	}
	for _, origin := range []string{"https://evil.example", "https://shop.example:8443", "null", "http://shop.example"} {
		w, _ = serve(h, "POST", origin, map[string]string{"Sec-Fetch-Site": "same-site"})
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"cross_site"`) {
			t.Errorf("a POST from %s: %d %s, want 403 cross_site", origin, w.Code, w.Body)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("a POST from %s got Access-Control-Allow-Origin %q", origin, got)
		}
		if w.Header().Get("Vary") != "Origin" {
			t.Errorf("a POST from %s: Vary %q, want Origin", origin, w.Header().Get("Vary"))
		}
	}
	// A request with no Origin (curl, an app, a same-origin GET) goes on untouched.
	if w, reached := serve(h, "POST", "", nil); !reached || w.Code != http.StatusAccepted || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no Origin: %d (reached %v) %v", w.Code, reached, w.Header())
	}
}

func TestACredentialedWildcardDoesNotLoad(t *testing.T) {
	for _, c := range []struct {
		h    cors.CORS
		want string
	}{
		{cors.CORS{Origins: []string{"*"}}, `seckill_cors: "*" cannot be allowed with credentials`},
		{cors.CORS{Origins: []string{"https://*.shop.example"}}, "no wildcards"},
		{cors.CORS{Origins: []string{"https://shop.example/app"}}, "no path"},
		{cors.CORS{Origins: []string{"null"}}, `"null"`},
		{cors.CORS{Origins: []string{"https://shop.example"}, Headers: []string{"*"}}, "no wildcard"},
	} {
		h := c.h
		_ = h.Provision(caddy.Context{})
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate = %v, want %q", c.h, err, c.want)
		}
	}
}

func TestOriginsFromTheEnvironmentAndTheCaddyfile(t *testing.T) {
	t.Setenv("SECKILL_TEST_ORIGINS", "https://a.example, http://127.0.0.1:3000")
	var h cors.CORS
	d := caddyfile.NewTestDispenser(`seckill_cors https://b.example {
		origins {env.SECKILL_TEST_ORIGINS}
		headers X-User-ID
		max_age 1m
	}`)
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	provisioned(t, &h)
	// Each origin is allowed: its preflight is answered here with its origin, the max age in
	// seconds and the configured header after the client's own.
	for _, o := range []string{"https://a.example", "http://127.0.0.1:3000", "https://b.example"} {
		w, reached := serve(&h, "OPTIONS", o, map[string]string{"Access-Control-Request-Method": "POST"})
		if reached || w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != o {
			t.Errorf("%s not allowed: %d (reached %v) %v", o, w.Code, reached, w.Header())
		}
		if maxAge, headers := w.Header().Get("Access-Control-Max-Age"), w.Header().Get("Access-Control-Allow-Headers"); maxAge != "60" || !strings.HasSuffix(headers, ", X-User-ID") {
			t.Errorf("max_age %s, headers %s", maxAge, headers)
		}
	}
	if err := new(cors.CORS).UnmarshalCaddyfile(caddyfile.NewTestDispenser("seckill_cors {\n origin https://a.example\n}")); err == nil ||
		!strings.Contains(err.Error(), "unrecognized seckill_cors option 'origin'") {
		t.Errorf("a typo: %v", err)
	}
}
