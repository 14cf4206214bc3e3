//go:build integration

package core

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/edge"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/shardcache"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// FuzzIssuerAnswersEveryRequestWithJSONAndNo5xx sends arbitrary methods, sale ids and user ids
// through what seckill_token does with them once its placeholders are read (anything but POST
// is method_not_allowed; else Decider.Issue on the real Redis, then WriteIssued or the
// result's refusal): no input may panic it or get a 5xx other than 503, and every answer is a
// JSON body. The sale "@" stands for a live sale, so inputs also reach the issuing path.
func FuzzIssuerAnswersEveryRequestWithJSONAndNo5xx(f *testing.F) {
	rdb := testenv.Redis(f)
	ctx := context.Background()
	live := testenv.ID("fuzz")
	err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(live)}, live, 10,
		time.Now().Add(-time.Minute).UnixMilli(), time.Now().Add(time.Hour).UnixMilli(), "init", (10 * time.Minute).Milliseconds()).Err()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(live), contract.TokensKey(live)) })
	d := &Decider{Store: RedisStore{R: rdb}, Caller: edge.Caller{Timeout: 2 * time.Second}, Shards: new(shardcache.Counts),
		Keyring: testRing(f), NewNonce: tokenformat.NewNonce, TTL: time.Minute, LeadTime: time.Minute}
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
		// The handler's path from here on (token.go, ServeDecision).
		res := Result{Outcome: MethodNotAllowed}
		if method == http.MethodPost {
			var err error
			if res, err = d.Issue(t.Context(), Request{Sale: sale, User: user}); err != nil && res.Outcome != Unavailable {
				t.Fatalf("Issue failed (%v) with outcome %q, not unavailable", err, res.Outcome)
			}
		}
		rec := httptest.NewRecorder()
		if res.Outcome == Issued {
			WriteIssued(rec, res)
		} else {
			ref := res.Refusal()
			ref.OrderID = res.OrderID
			rec.WriteHeader(ref.Status)
			_, _ = rec.Write(hcore.AppendBody(nil, ref))
		}
		if rec.Code < 200 || rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
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
