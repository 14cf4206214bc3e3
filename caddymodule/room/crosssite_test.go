package room

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/refusal"
	"github.com/seckilledge/seckill/contract"
)

// Issue 33, item 3: a state-changing request a browser sends from another site (a simple
// text/plain form post, or a sibling subdomain's fetch) is refused 403 cross_site before the
// handler does anything (this handler was built without a store: reaching it would panic);
// the shared rule is refusal.CheckRequest (its own test has the whole table). Only the
// refusal writer and its counters are set, as Provision sets them.
func TestACrossSiteRequestIsRefusedBeforeAnythingElse(t *testing.T) {
	var h caddyhttp.MiddlewareHandler = &Room{ep: refusal.Endpoints{Requests: requests, Shed: shed, Name: "room"}}
	for name, hdr := range map[string]map[string]string{
		"a form on another site": {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
		"a sibling subdomain":    {"Sec-Fetch-Site": "same-site", "Origin": "https://evil.shop.example"},
		"another origin":         {"Origin": "https://evil.example"},
	} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			r := httptest.NewRequest(method, "https://shop.example/seckill/s1/queue", strings.NewReader(``))
			r.Header.Set("X-User-ID", "victim")
			for k, v := range hdr {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			_ = h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
				t.Fatalf("%s %s: passed to the next handler", name, method)
				return nil
			}))
			var body struct{ Code string }
			_ = json.Unmarshal(w.Body.Bytes(), &body)
			if w.Code != http.StatusForbidden || body.Code != contract.CodeCrossSite {
				t.Errorf("%s %s: %d %s, want 403 cross_site", name, method, w.Code, w.Body)
			}
		}
	}
}
