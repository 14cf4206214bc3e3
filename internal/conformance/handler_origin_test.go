package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
)

// The same-origin rule of every state-changing route of the edge.
func TestAStateChangingRequestFromAnotherSiteIsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		method string
		hdr    map[string]string
		ok     bool
	}{
		{"curl or an app: no browser headers", "POST", nil, true},
		{"the shop's own page", "POST", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "https://shop.example"}, true},
		{"own origin, other case", "POST", map[string]string{"Origin": "https://SHOP.example"}, true},
		{"own origin over http (TLS ended before Caddy)", "DELETE", map[string]string{"Origin": "http://shop.example"}, true},
		{"typed in the address bar", "POST", map[string]string{"Sec-Fetch-Site": "none"}, true},
		{"a form on another site", "POST", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, false},
		{"cross-site without Origin", "POST", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"a sibling subdomain (same-site)", "POST", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://evil.shop.example"}, false},
		{"another origin, old browser", "DELETE", map[string]string{"Origin": "https://evil.example"}, false},
		{"another port", "POST", map[string]string{"Origin": "https://shop.example:8443"}, false},
		{"Origin null", "POST", map[string]string{"Origin": "null"}, false},
		{"Origin with a path", "POST", map[string]string{"Origin": "https://shop.example/x"}, false},
		{"Origin not http", "POST", map[string]string{"Origin": "file://shop.example"}, false},
		{"Origin empty", "POST", map[string]string{"Origin": ""}, false},
		{"PUT", "PUT", map[string]string{"Origin": "https://evil.example"}, false},
		{"PATCH", "PATCH", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"a cross-site GET (reads change nothing)", "GET", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, true},
		{"HEAD", "HEAD", map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
	} {
		r := httptest.NewRequest(c.method, "https://shop.example/seckill/s1/draw", nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		ref, ok := handler.CheckRequest(r)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
		}
		if !ok && (ref.Status != http.StatusForbidden || ref.Code != contract.CodeCrossSite) {
			t.Errorf("%s: refusal %+v, want 403 cross_site", c.name, ref)
		}
	}
	// Two Origin headers: refused.
	r := httptest.NewRequest("POST", "https://shop.example/seckill/s1/buy", nil)
	r.Header["Origin"] = []string{"https://shop.example", "https://evil.example"}
	if _, ok := handler.CheckRequest(r); ok {
		t.Error("two Origin headers passed")
	}
	// The path rule still comes first.
	r = httptest.NewRequest("POST", "https://shop.example/seckill/a/../b/buy", nil)
	r.URL.Path = "/seckill/a/../b/buy"
	if ref, ok := handler.CheckRequest(r); ok || ref.Code != contract.CodeBadRequest {
		t.Errorf("a non-canonical path: %v %+v", ok, ref)
	}
}

// A state-changing request from another origin passes the cross-site rule only when
// seckill_cors found that very Origin on its allow list; any other origin is still refused.
func TestAnAllowListedOriginPassesTheCrossSiteRuleAndNoOther(t *testing.T) {
	req := func(origin string) *http.Request {
		r := httptest.NewRequest("POST", "https://edge.example/shop-api/drop/s1/buy", nil)
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{}))
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Origin", origin)
		return r
	}
	listed := req("https://shop.example")
	if _, ok := handler.CheckRequest(listed); ok {
		t.Fatal("a cross-site POST passed before its origin was allowed")
	}
	handler.AllowOrigin(listed, "https://shop.example")
	if _, ok := handler.CheckRequest(listed); !ok {
		t.Error("the allow-listed origin was refused")
	}
	other := req("https://evil.example")
	handler.AllowOrigin(other, "https://shop.example") // the variable names another origin than the request's
	if ref, ok := handler.CheckRequest(other); ok || ref.Code != contract.CodeCrossSite {
		t.Errorf("an origin not the allowed one: ok %v %+v, want cross_site", ok, ref)
	}
	if handler.AllowedOrigin(httptest.NewRequest("POST", "/", nil)) {
		t.Error("a request without the variables is allowed")
	}
}
