//go:build integration

package token

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/internal/testenv"
)

// FuzzIssuerAnswersEveryRequestWithJSONAndNo5xx sends arbitrary methods, sale path segments
// and user ids to the handler on the real Redis: no input may panic it or get a 5xx other
// than 503, and every answer is a JSON body. The sale "@" stands for a live sale, so inputs
// also reach the issuing path.
func FuzzIssuerAnswersEveryRequestWithJSONAndNo5xx(f *testing.F) {
	rdb := testenv.Redis(f)
	h := newIssuer(f, rdb, testRing(f), time.Minute, time.Minute)
	live := testenv.ID("fuzz")
	preheat(f, rdb, live, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	for _, seed := range []struct{ method, sale, user string }{
		{"POST", "@", "alice"},
		{"POST", "@", ""},
		{"GET", "@", "alice"},
		{"POST", "nosuch", "bob"},
		{"POST", "a/b", "alice"},
		{"POST", "", "alice"},
		{"POST", "@", "{http.request.header.X-User-ID}"},
		{"POST", "@", "ünïcode"},
		{"POST", "@", "a\x00b"},
		{"PO ST", "@", "alice"},
		{"POST", "{env.HOME}", "alice"},
	} {
		f.Add(seed.method, seed.sale, seed.user)
	}
	f.Fuzz(func(t *testing.T, method, sale, user string) {
		if sale == "@" {
			sale = live
		}
		req := &http.Request{
			Method: method,
			URL:    &url.URL{Path: "/seckill/" + sale + "/token"},
			Header: http.Header{"X-User-ID": []string{user}},
			Host:   "gw.test",
		}
		req = req.WithContext(t.Context())
		caddyhttp.NewTestReplacer(req)
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, req, nil); err != nil {
			t.Fatalf("ServeHTTP returned %v", err)
		}
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%q %q %q: status %d", method, sale, user, rec.Code)
		}
		var body map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%d: body is not JSON: %q", rec.Code, rec.Body.String())
		}
		if rec.Code == http.StatusOK && (body["token"] == "" || body["expires_at"] == "") {
			t.Fatalf("200 without a token: %s", rec.Body.String())
		}
		if rec.Code != http.StatusOK && body["code"] == "" {
			t.Fatalf("%d refusal without a code: %s", rec.Code, rec.Body.String())
		}
	})
}
