//go:build integration

package token

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestATokenIssuerWithAChallengeProviderMintsNothingWithoutAGoodToken(t *testing.T) {
	rdb := testenv.Redis(t)
	siteverify := botchecktest.NewSiteverify(t, "test-secret", map[string]botchecktest.Answer{
		"good": {Body: `{"success":true,"hostname":"gw.test"}`},
	})
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	h.ChallengeProvider = &botcheckcaddy.Provider{Name: "recaptcha", Secret: "test-secret", VerifyURL: siteverify.URL}
	if err := h.ChallengeProvider.Provision(nil, nil); err != nil {
		t.Fatal(err)
	}
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	post := func(token string) (int, map[string]string) {
		req := httptest.NewRequest(http.MethodPost, "http://gw.test"+tokenPath(sale), nil)
		req.Header.Set("X-User-ID", "alice")
		if token != "" {
			req.Header.Set(botcheckcaddy.Header, token)
		}
		caddyhttp.NewTestReplacer(req)
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, req, nil); err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body
	}
	refused := count(string(BotRefused))
	for token, code := range map[string]string{"": contract.CodeBotChallengeRequired, "forged": contract.CodeBotChallengeFailed} {
		if status, body := post(token); status != http.StatusForbidden || body["code"] != code {
			t.Fatalf("token %q: %d %v, want 403 %s", token, status, body, code)
		}
	}
	if d := count(string(BotRefused)) - refused; d != 2 {
		t.Errorf("bot_refused counted %v times, want 2", d)
	}
	if n, err := rdb.HLen(context.Background(), contract.TokensKey(sale)).Result(); err != nil || n != 0 {
		t.Fatalf("%d tokens recorded (%v) after refused requests, want none", n, err)
	}
	if status, body := post("good"); status != http.StatusOK || body["token"] == "" {
		t.Fatalf("a good token: %d %v", status, body)
	}
}
