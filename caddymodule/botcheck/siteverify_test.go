package botcheck_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/contract"
)

const testSecret = "0x-test-secret"

type standIn struct{ *botchecktest.Siteverify }

func newStandIn(t *testing.T, answers map[string]botchecktest.Answer) standIn {
	return standIn{botchecktest.NewSiteverify(t, testSecret, answers)}
}

func (s standIn) check(p botcheck.Provider, minScore float64, failOpen bool) botcheck.Check {
	p.URL = s.URL
	return botcheck.Check{
		Verifier: &botcheck.Siteverify{Provider: p, Secret: testSecret, MinScore: minScore, Client: s.Client()},
		Timeout:  200 * time.Millisecond,
		FailOpen: failOpen,
	}
}

var shop = botcheck.Binding{Host: "shop.example", Sale: "s1", Action: "enter", RemoteIP: "203.0.113.9"}

func TestSiteverifyDecidesEachAnswerOfTheProvider(t *testing.T) {
	s := newStandIn(t, map[string]botchecktest.Answer{
		"good":         {Body: `{"success":true,"hostname":"shop.example","action":"enter","challenge_ts":"2026-01-01T00:00:00Z"}`},
		"good-nohost":  {Body: `{"success":true}`},
		"good-upper":   {Body: `{"success":true,"hostname":"SHOP.example"}`},
		"spent":        {Body: `{"success":false,"error-codes":["timeout-or-duplicate"]}`},
		"other-host":   {Body: `{"success":true,"hostname":"evil.example","action":"enter"}`},
		"other-action": {Body: `{"success":true,"hostname":"shop.example","action":"login"}`},
		"human":        {Body: `{"success":true,"hostname":"shop.example","action":"enter","score":0.9}`},
		"bot":          {Body: `{"success":true,"hostname":"shop.example","action":"enter","score":0.1}`},
		"score-wild":   {Body: `{"success":true,"hostname":"shop.example","score":7}`},
		"5xx":          {Status: http.StatusBadGateway, Body: `{"success":true}`},
		"not-json":     {Body: `<html>maintenance</html>`},
		"cut-json":     {Body: `{"success":tr`},
		"hang":         {Hang: true},
	})
	for _, tc := range []struct {
		token    string
		failOpen bool
		want     botcheck.Outcome
		reason   string
	}{
		{"good", false, botcheck.Passed, ""},
		{"good-nohost", false, botcheck.Passed, ""},
		{"good-upper", false, botcheck.Passed, ""},
		{"human", false, botcheck.Passed, ""},
		{"unknown", false, botcheck.Failed, "invalid-input-response"},
		{"spent", false, botcheck.Failed, "timeout-or-duplicate"},
		{"other-host", false, botcheck.Failed, "hostname"},
		{"other-action", false, botcheck.Failed, "action"},
		{"bot", false, botcheck.Flagged, ""},
		{"", false, botcheck.Missing, "missing"},
		{"score-wild", false, botcheck.Unavailable, ""},
		{"5xx", false, botcheck.Unavailable, ""},
		{"not-json", false, botcheck.Unavailable, ""},
		{"cut-json", false, botcheck.Unavailable, ""},
		{"hang", false, botcheck.Unavailable, ""},
		{"5xx", true, botcheck.Unchecked, ""},
		{"hang", true, botcheck.Unchecked, ""},
		// A bad token stays bad when the site fails open: failing open is for the provider's
		// absence, not for a token it refused.
		{"spent", true, botcheck.Failed, "timeout-or-duplicate"},
	} {
		t.Run(fmt.Sprintf("%s/open=%v", tc.token, tc.failOpen), func(t *testing.T) {
			got, v, err := s.check(botcheck.Turnstile, 0.5, tc.failOpen).Run(context.Background(), tc.token, shop)
			if got != tc.want {
				t.Fatalf("outcome %v (verdict %+v, err %v), want %v", got, v, err, tc.want)
			}
			if v.Reason != tc.reason {
				t.Errorf("reason %q, want %q", v.Reason, tc.reason)
			}
			if (err != nil) != (got == botcheck.Unavailable || got == botcheck.Unchecked) {
				t.Errorf("err %v with outcome %v: an error is exactly an unavailable provider", err, got)
			}
			if asked := tc.token != ""; asked && s.Last().Get("remoteip") != shop.RemoteIP {
				t.Errorf("the provider was handed remoteip %q, want %q", s.Last().Get("remoteip"), shop.RemoteIP)
			}
		})
	}
}

func TestSiteverifyScoresAreLikelihoodOfAHuman(t *testing.T) {
	s := newStandIn(t, map[string]botchecktest.Answer{
		"t": {Body: `{"success":true,"hostname":"shop.example","score":0.2}`},
	})
	_, rc, _ := s.check(botcheck.ReCAPTCHA, 0.5, false).Run(context.Background(), "t", shop)
	if rc.Score != 0.2 || !rc.Flag {
		t.Errorf("reCAPTCHA's 0.2 (likely a bot): verdict %+v, want score 0.2, flagged", rc)
	}
	// hCaptcha scores risk: its 0.2 is a likely human.
	_, hc, _ := s.check(botcheck.HCaptcha, 0.5, false).Run(context.Background(), "t", shop)
	if hc.Score != 0.8 || hc.Flag {
		t.Errorf("hCaptcha's 0.2 (low risk): verdict %+v, want score 0.8, not flagged", hc)
	}
	// Without a minimum, nobody is flagged.
	_, none, _ := s.check(botcheck.ReCAPTCHA, 0, false).Run(context.Background(), "t", shop)
	if none.Flag {
		t.Errorf("no min_score: verdict %+v flagged", none)
	}
}

func TestSiteverifyWithAWrongSecretIsAnUnavailableProviderNotABadEntrant(t *testing.T) {
	s := newStandIn(t, map[string]botchecktest.Answer{"good": {Body: `{"success":true}`}})
	c := s.check(botcheck.Turnstile, 0, false)
	c.Verifier.(*botcheck.Siteverify).Secret = "wrong"
	got, _, err := c.Run(context.Background(), "good", shop)
	if got != botcheck.Unavailable || err == nil {
		t.Fatalf("outcome %v, err %v; want unavailable with the provider's error", got, err)
	}
}

func TestSiteverifyHostnamesReplaceTheRequestHost(t *testing.T) {
	s := newStandIn(t, map[string]botchecktest.Answer{"good": {Body: `{"success":true,"hostname":"www.shop.example"}`}})
	c := s.check(botcheck.Turnstile, 0, false)
	if got, _, _ := c.Run(context.Background(), "good", shop); got != botcheck.Failed {
		t.Fatalf("another host than the request's: outcome %v, want failed", got)
	}
	c.Verifier.(*botcheck.Siteverify).Hostnames = []string{"shop.example", "www.shop.example"}
	if got, v, err := c.Run(context.Background(), "good", shop); got != botcheck.Passed {
		t.Fatalf("a listed host: outcome %v (%+v, %v), want passed", got, v, err)
	}
}

func TestOverlongTokensAreRefusedWithoutAskingTheProvider(t *testing.T) {
	s := newStandIn(t, nil)
	long := make([]byte, botcheck.MaxTokenLen+1)
	for i := range long {
		long[i] = 'a'
	}
	got, _, _ := s.check(botcheck.Turnstile, 0, false).Run(context.Background(), string(long), shop)
	if got != botcheck.Failed || s.Calls.Load() != 0 {
		t.Fatalf("outcome %v after %d calls, want failed after none", got, s.Calls.Load())
	}
}

func TestOutcomesMapToTheirRefusals(t *testing.T) {
	iss, _ := issuers(t)
	pp := &botcheck.PrivacyPass{IssuerName: iss.Name, Key: iss.Key, Spender: &spender{}}
	for _, tc := range []struct {
		o      botcheck.Outcome
		pp     bool
		status int
		code   string
		enters bool
	}{
		{botcheck.Passed, false, 0, "", true},
		{botcheck.Flagged, false, 0, "", true},
		{botcheck.Unchecked, false, 0, "", true},
		{botcheck.Missing, false, 403, contract.CodeBotChallengeRequired, false},
		{botcheck.Failed, false, 403, contract.CodeBotChallengeFailed, false},
		{botcheck.Unavailable, false, 503, contract.CodeUnavailable, false},
		{botcheck.Missing, true, 401, contract.CodeBotChallengeRequired, false},
		{botcheck.Failed, true, 401, contract.CodeBotChallengeFailed, false},
		{botcheck.Unavailable, true, 503, contract.CodeUnavailable, false},
	} {
		c := botcheck.Check{Verifier: &botcheck.Siteverify{Provider: botcheck.Turnstile}}
		if tc.pp {
			c.Verifier = pp
		}
		status, code, challenge := c.Refusal(tc.o, shop)
		if status != tc.status || code != tc.code || tc.o.Enters() != tc.enters {
			t.Errorf("%v (privacy pass %v): %d %q enters=%v, want %d %q enters=%v", tc.o, tc.pp, status, code, tc.o.Enters(), tc.status, tc.code, tc.enters)
		}
		if (challenge != "") != (status == 401) {
			t.Errorf("%v (privacy pass %v): WWW-Authenticate %q with status %d", tc.o, tc.pp, challenge, status)
		}
	}
}

func TestProviderNamesAreTheConfigurationNames(t *testing.T) {
	for _, n := range []string{"turnstile", "hcaptcha", "recaptcha"} {
		if p, ok := botcheck.ProviderNamed(n); !ok || p.Name != n || p.URL == "" {
			t.Errorf("%s: %+v %v", n, p, ok)
		}
	}
	if _, ok := botcheck.ProviderNamed("privacypass"); ok {
		t.Error("privacypass is no siteverify provider")
	}
}
