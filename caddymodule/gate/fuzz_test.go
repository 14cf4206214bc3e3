//go:build integration

package gate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// FuzzGateRequest throws arbitrary sale path segments, user and token headers and bodies at
// the handler (against the real Redis): no input may yield a 5xx other than 503, a body that is
// not the contract's JSON, or a panic.
func FuzzGateRequest(f *testing.F) {
	rdb := testenv.Redis(f)
	sale := newSale(f, rdb, 1_000_000, -time.Minute, time.Hour)
	events := caddymodule.NewSaleEvents(rdb, zap.NewNop())
	f.Cleanup(func() { _ = events.Destruct() })
	kr := testKeyring(f, "k1")
	tok, _, _ := kr.Issue(sale, "u1", time.Now().Add(time.Minute))
	gates := []*Gate{
		{Subject: handler.Subject{Sale: "{http.request.uri.path.1}", User: "{http.request.header.X-User-ID}"}},
		{Subject: handler.Subject{Sale: "{http.request.uri.path.1}", User: "{http.request.header.X-User-ID}"}, RequireToken: true,
			Token: "{http.request.header.X-Seckill-Token}"},
	}
	for _, g := range gates {
		g.logger, g.RetryAfter = zap.NewNop(), caddy.Duration(time.Second)
		g.decider = &core.Decider{Store: core.RedisStore{R: rdb}, Caller: edge.Caller{Timeout: 2 * time.Second},
			Shards: new(caddymodule.ShardCounts), SoldOut: events, Now: time.Now, NewOrderID: uuidV7}
		if g.RequireToken {
			g.decider.Keyring = kr
		}
	}

	f.Add(sale, "u1", tok, "", false)
	f.Add(sale, "u1", tok, "{}", true)
	f.Add(sale, "", "", "", false)
	f.Add("../etc", "u\x00", "1.k1.zz.zz.zz", "garbage", true)
	f.Add(strings.Repeat("s", 65), "{http.request.uri}", "{env.HOME}", "", true)
	f.Add("%2F", "ü", "1....", "\xff", false)
	f.Fuzz(func(t *testing.T, saleSeg, user, token, body string, requireToken bool) {
		g := gates[0]
		if requireToken {
			g = gates[1]
		}
		req := &http.Request{
			Method: http.MethodPost,
			URL:    &url.URL{Path: "/seckill/" + saleSeg + "/buy"},
			Header: http.Header{"X-User-Id": {user}, "X-Seckill-Token": {token}},
			Body:   http.NoBody,
			Host:   "gateway",
		}
		if body != "" {
			req.Body = httpBody(body)
		}
		req = req.WithContext(context.Background())
		repl := caddyhttp.NewTestReplacer(req)
		req = req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, req, nil); err != nil {
			t.Fatalf("ServeHTTP returned %v", err)
		}
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d for sale %q user %q token %q", w.Code, saleSeg, user, token)
		}
		if w.Code == http.StatusAccepted {
			var ok struct{ OrderID, Status string }
			if err := json.Unmarshal(w.Body.Bytes(), &ok); err != nil {
				t.Fatalf("202 body %q: %v", w.Body, err)
			}
			return
		}
		var ref contract.Refusal
		if err := json.Unmarshal(w.Body.Bytes(), &ref); err != nil || ref.Code == "" {
			t.Fatalf("status %d body %q is not a refusal", w.Code, w.Body)
		}
	})
}

type stringBody struct{ *strings.Reader }

func (stringBody) Close() error { return nil }

func httpBody(s string) stringBody { return stringBody{strings.NewReader(s)} }
