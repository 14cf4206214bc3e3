//go:build integration

package token

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/internal/testenv"
)

// BenchmarkIssuerServeHTTP is one token request through the handler on the real Redis (one
// script round trip each, a different user each time), without the HTTP server.
func BenchmarkIssuerServeHTTP(b *testing.B) {
	rdb := testenv.Redis(b)
	h := newIssuer(b, rdb, testRing(b), time.Minute, time.Minute)
	sale := testenv.ID("bench")
	preheat(b, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	b.Cleanup(func() { rdb.Del(b.Context(), "seckill:{sale:"+sale+"}:tokens") })
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		req := httptest.NewRequest(http.MethodPost, "/seckill/"+sale+"/token", nil)
		req.Header.Set("X-User-ID", "u"+strconv.Itoa(i))
		caddyhttp.NewTestReplacer(req)
		rec := httptest.NewRecorder()
		_ = h.ServeHTTP(rec, req, nil)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	}
}
