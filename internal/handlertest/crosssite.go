package handlertest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/contract"
)

// RefusesCrossSite checks the same-origin rule on one handler: a state-changing request a browser
// sends from another site (a simple text/plain form post, a sibling subdomain's fetch, another
// origin) is answered 403 cross_site and never reaches the next handler. h is built without a
// store, so a request that got past the check would panic. The rule itself is
// refusal.CheckRequest, whose own test has the whole table; this is the one copy of the
// per-handler check.
func RefusesCrossSite(t *testing.T, h caddyhttp.MiddlewareHandler, url, body string, methods ...string) {
	t.Helper()
	for name, hdr := range map[string]map[string]string{
		"a form on another site": {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
		"a sibling subdomain":    {"Sec-Fetch-Site": "same-site", "Origin": "https://evil.shop.example"},
		"another origin":         {"Origin": "https://evil.example"},
	} {
		for _, method := range methods {
			r := httptest.NewRequest(method, url, strings.NewReader(body))
			r.Header.Set("X-User-ID", "victim")
			for k, v := range hdr {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			_ = h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
				t.Fatalf("%s %s: passed to the next handler", name, method)
				return nil
			}))
			var got struct{ Code string }
			_ = json.Unmarshal(w.Body.Bytes(), &got)
			if w.Code != http.StatusForbidden || got.Code != contract.CodeCrossSite {
				t.Errorf("%s %s: %d %s, want 403 cross_site", name, method, w.Code, w.Body)
			}
		}
	}
}
