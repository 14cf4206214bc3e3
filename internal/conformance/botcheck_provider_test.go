package conformance_test

// The challenge provider's own tests (caddymodule/botcheck/botcheckcaddy: its Caddyfile, its
// provisioning, its answers and refusals): it links Caddy in every part, so they live in
// this binary; the verifiers under it are tested in caddymodule/botcheck, which links none.

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/contract"
)

func parse(t *testing.T, src string) (*botcheckcaddy.Provider, error) {
	t.Helper()
	d := caddyfile.NewTestDispenser(src)
	d.Next() // challenge_provider
	p := new(botcheckcaddy.Provider)
	return p, p.UnmarshalCaddyfile(d)
}

func TestChallengeProviderCaddyfileReadsEveryOption(t *testing.T) {
	p, err := parse(t, `challenge_provider turnstile {
		site_key 0x4AAA
		secret {env.TURNSTILE_SECRET}
		verify_url http://127.0.0.1:9/siteverify
		hostnames shop.example www.shop.example
		action enter
		min_score 0.3
		timeout 1500ms
		fail_open
	}`)
	if err != nil {
		t.Fatal(err)
	}
	want := &botcheckcaddy.Provider{Name: "turnstile", SiteKey: "0x4AAA", Secret: "{env.TURNSTILE_SECRET}",
		VerifyURL: "http://127.0.0.1:9/siteverify", Hostnames: []string{"shop.example", "www.shop.example"},
		Action: "enter", MinScore: 0.3, Timeout: caddy.Duration(1500e6), FailOpen: true}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v\nwant %+v", p, want)
	}
	p, err = parse(t, "challenge_provider privacypass {\n issuer_name issuer.example\n issuer_key AAAA\n context_window 10m\n fail_closed\n}")
	if err != nil || p.Name != "privacypass" || p.IssuerName != "issuer.example" || p.IssuerKey != "AAAA" || p.ContextWindow != caddy.Duration(600e9) || p.FailOpen {
		t.Errorf("privacypass: %+v, %v", p, err)
	}
	for _, bad := range []string{
		"challenge_provider",
		"challenge_provider turnstile extra",
		"challenge_provider turnstile {\n secret\n}",
		"challenge_provider turnstile {\n secret a b\n}",
		"challenge_provider turnstile {\n min_score high\n}",
		"challenge_provider turnstile {\n fail_open yes\n}",
		"challenge_provider turnstile {\n hostnames\n}",
		"challenge_provider turnstile {\n sitekey x\n}",
	} {
		if _, err := parse(t, bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestChallengeProviderRefusesAnIncompleteConfigAtProvision(t *testing.T) {
	iss := botchecktest.NewIssuer(t, "issuer.example")
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: provisioning does no I/O
	t.Cleanup(func() { _ = rdb.Close() })
	for name, p := range map[string]botcheckcaddy.Provider{
		"unknown provider":       {Name: "captcha", Secret: "s"},
		"no secret":              {Name: "turnstile"},
		"secret env unset":       {Name: "hcaptcha", Secret: "{env.BOTCHECK_TEST_UNSET}"},
		"score above 1":          {Name: "recaptcha", Secret: "s", MinScore: 1.5},
		"verify_url relative":    {Name: "turnstile", Secret: "s", VerifyURL: "/siteverify"},
		"verify_url ftp":         {Name: "turnstile", Secret: "s", VerifyURL: "ftp://x/siteverify"},
		"no issuer":              {Name: "privacypass", IssuerKey: iss.TokenKey()},
		"no key":                 {Name: "privacypass", IssuerName: "issuer.example"},
		"key not base64url":      {Name: "privacypass", IssuerName: "issuer.example", IssuerKey: "not base64!"},
		"key not an RSA-PSS key": {Name: "privacypass", IssuerName: "issuer.example", IssuerKey: "AAAA"},
	} {
		if err := p.Provision(rdb, nil); err == nil {
			t.Errorf("%s: provisioned", name)
		}
	}
	ok := botcheckcaddy.Provider{Name: "privacypass", IssuerName: "issuer.example", IssuerKey: iss.TokenKey()}
	if err := ok.Provision(nil, nil); err == nil {
		t.Error("privacypass without a Redis: provisioned")
	}
	if err := ok.Provision(rdb, nil); err != nil {
		t.Errorf("privacypass: %v", err)
	}
	// The issuer directory's token-key, padded or not.
	ok.IssuerKey = strings.TrimRight(ok.IssuerKey, "=")
	if err := ok.Provision(rdb, nil); err != nil {
		t.Errorf("privacypass, unpadded key: %v", err)
	}
}

// siteverify is a stand-in siteverify server for the secret "s3cret": "good" passes for
// shop.example, "down" answers 502.
func siteverify(t *testing.T) *botchecktest.Siteverify {
	return botchecktest.NewSiteverify(t, "s3cret", map[string]botchecktest.Answer{
		"good": {Body: `{"success":true,"hostname":"shop.example"}`},
		"down": {Status: http.StatusBadGateway},
	})
}

func entry(host string, header map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/seckill/s1/queue", nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	// The client's address as Caddy resolved it (trusted proxies honoured).
	vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
	return r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
}

func TestChallengeProviderReadsTheTokenOfTheJSONProtocol(t *testing.T) {
	t.Setenv("BOTCHECK_TEST_SECRET", "s3cret")
	sv := siteverify(t)
	p := botcheckcaddy.Provider{Name: "turnstile", Secret: "{env.BOTCHECK_TEST_SECRET}", VerifyURL: sv.URL}
	if err := p.Provision(nil, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		host   string
		header map[string]string
		want   botcheck.Outcome
		status int
	}{
		{"the header", "shop.example:8088", map[string]string{botcheckcaddy.Header: "good"}, botcheck.Passed, 0},
		{"a bad token", "shop.example", map[string]string{botcheckcaddy.Header: "bad"}, botcheck.Failed, 403},
		{"another host", "evil.example", map[string]string{botcheckcaddy.Header: "good"}, botcheck.Failed, 403},
		{"no token", "shop.example", nil, botcheck.Missing, 403}, // not asked
		// Authorization is the identity's (a bearer session) unless it is a PrivateToken.
		{"authorization", "shop.example", map[string]string{"Authorization": "Bearer good"}, botcheck.Missing, 403},
	} {
		before := sv.Calls.Load()
		w := httptest.NewRecorder()
		o, ref := p.Check(ctx, w, entry(tc.host, tc.header), "s1")
		if o != tc.want || ref.Status != tc.status {
			t.Errorf("%s: %v, %d %s; want %v, %d", tc.name, o, ref.Status, ref.Code, tc.want, tc.status)
		}
		if w.Header().Get("WWW-Authenticate") != "" {
			t.Errorf("%s: a WWW-Authenticate for a siteverify provider", tc.name)
		}
		asked := sv.Calls.Load() > before
		if asked != (tc.want != botcheck.Missing) || asked && sv.Last().Get("remoteip") != "203.0.113.7" {
			t.Errorf("%s: asked %v, remoteip %q; want the provider asked with Caddy's client address exactly when there is a token", tc.name, asked, sv.Last().Get("remoteip"))
		}
	}
}

func TestPrivacyPassRefusalNamesTheChallengeToAnswer(t *testing.T) {
	iss := botchecktest.NewIssuer(t, "issuer.example")
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	p := botcheckcaddy.Provider{Name: "privacypass", IssuerName: iss.Name, IssuerKey: iss.TokenKey()}
	if err := p.Provision(rdb, nil); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	o, ref := p.Check(context.Background(), w, entry("shop.example:8443", nil), "s1")
	if o != botcheck.Missing || ref.Status != http.StatusUnauthorized || ref.Code != contract.CodeBotChallengeRequired {
		t.Fatalf("no token: %v, %d %s", o, ref.Status, ref.Code)
	}
	h := w.Header().Get("WWW-Authenticate")
	enc, ok := strings.CutPrefix(h, `PrivateToken challenge="`)
	if !ok {
		t.Fatalf("WWW-Authenticate %q", h)
	}
	raw, err := base64.URLEncoding.DecodeString(enc[:strings.IndexByte(enc, '"')])
	if err != nil {
		t.Fatal(err)
	}
	// The challenge names the issuer and this origin, port included.
	if !strings.Contains(string(raw), "issuer.example") || !strings.HasSuffix(string(raw), "shop.example:8443") {
		t.Errorf("challenge %q", raw)
	}
	if !strings.Contains(h, `token-key="`+iss.TokenKey()+`"`) {
		t.Errorf("WWW-Authenticate %q does not carry the issuer's key", h)
	}
}

func TestAnUnavailableProviderIsLoggedAndTheSiteDecides(t *testing.T) {
	url := siteverify(t).URL
	for _, failOpen := range []bool{false, true} {
		core, logs := observer.New(zap.WarnLevel)
		p := botcheckcaddy.Provider{Name: "hcaptcha", Secret: "s3cret", VerifyURL: url, FailOpen: failOpen}
		if err := p.Provision(nil, zap.New(core)); err != nil {
			t.Fatal(err)
		}
		o, ref := p.Check(context.Background(), httptest.NewRecorder(), entry("shop.example", map[string]string{botcheckcaddy.Header: "down"}), "s1")
		want, status := botcheck.Unavailable, http.StatusServiceUnavailable
		if failOpen {
			want, status = botcheck.Unchecked, 0
		}
		if o != want || ref.Status != status {
			t.Errorf("fail_open %v: %v, %d %s; want %v, %d", failOpen, o, ref.Status, ref.Code, want, status)
		}
		if logs.FilterMessage("the bot challenge provider could not be asked").Len() != 1 {
			t.Errorf("fail_open %v: logged %v, want the provider's failure once", failOpen, logs.All())
		}
	}
	// A nil provider (no challenge_provider) lets everyone in.
	var none *botcheckcaddy.Provider
	if o, _ := none.Check(context.Background(), httptest.NewRecorder(), entry("shop.example", nil), "s1"); !o.Enters() {
		t.Errorf("no provider: %v", o)
	}
}
