package botcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Provider is a CAPTCHA service with a siteverify API: POST secret, response and remoteip,
// form-encoded; a JSON answer with success, hostname, action, score and error-codes.
type Provider struct {
	// Name is the provider's name in the configuration ("turnstile").
	Name string
	// URL is its siteverify endpoint.
	URL string
	// ScoreIsRisk: the provider's score grows with the risk (hCaptcha Enterprise's), where
	// reCAPTCHA's grows with the likelihood of a human. Verdict.Score is turned around for it.
	ScoreIsRisk bool
}

// The siteverify providers.
var (
	Turnstile = Provider{Name: "turnstile", URL: "https://challenges.cloudflare.com/turnstile/v0/siteverify"}
	HCaptcha  = Provider{Name: "hcaptcha", URL: "https://api.hcaptcha.com/siteverify", ScoreIsRisk: true}
	ReCAPTCHA = Provider{Name: "recaptcha", URL: "https://www.google.com/recaptcha/api/siteverify"}
)

// ProviderNamed is the siteverify provider of that name.
func ProviderNamed(name string) (Provider, bool) {
	for _, p := range []Provider{Turnstile, HCaptcha, ReCAPTCHA} {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// maxAnswer bounds the siteverify answer read: theirs are a few hundred bytes.
const maxAnswer = 64 << 10

// Siteverify checks tokens through a provider's siteverify API. Providers spend a token at
// its first check (a second answers "timeout-or-duplicate"), so no state is kept here.
type Siteverify struct {
	Provider
	// Secret is the site's secret key with the provider.
	Secret string
	// Hostnames are the host names an answer may name; empty: the Binding's Host. A
	// provider's answer without a hostname (some test keys) is not compared.
	Hostnames []string
	// MinScore flags a token whose Verdict.Score is below it (0: none is flagged).
	MinScore float64
	// Client makes the request; nil: http.DefaultClient. The deadline is the context's.
	Client *http.Client
}

// siteverifyAnswer is the JSON the providers answer.
type siteverifyAnswer struct {
	Success    bool     `json:"success"`
	Hostname   string   `json:"hostname"`
	Action     string   `json:"action"`
	Score      *float64 `json:"score"`
	ErrorCodes []string `json:"error-codes"`
}

// errorCodesOurs are the error codes that say the request was wrong, not the token (our
// secret, our request, the provider's own failure): the provider is, for this site,
// unavailable, and the entrant is not to blame.
var errorCodesOurs = map[string]bool{
	"missing-input-secret":    true,
	"invalid-input-secret":    true,
	"sitekey-secret-mismatch": true,
	"bad-request":             true,
	"internal-error":          true,
}

// Verify asks the provider about token.
func (s *Siteverify) Verify(ctx context.Context, token string, b Binding) (Verdict, error) {
	form := url.Values{"secret": {s.Secret}, "response": {token}}
	if b.RemoteIP != "" {
		form.Set("remoteip", b.RemoteIP)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return Verdict{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Verdict{}, fmt.Errorf("%s siteverify: %w", s.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return Verdict{}, fmt.Errorf("%s siteverify: status %d", s.Name, resp.StatusCode)
	}
	var a siteverifyAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return Verdict{}, fmt.Errorf("%s siteverify: the answer is not its JSON: %w", s.Name, err)
	}
	return s.judge(a, b)
}

// judge turns an answer into a verdict.
func (s *Siteverify) judge(a siteverifyAnswer, b Binding) (Verdict, error) {
	if !a.Success {
		for _, c := range a.ErrorCodes {
			if errorCodesOurs[c] {
				return Verdict{}, fmt.Errorf("%s siteverify: %s", s.Name, c)
			}
		}
		reason := "rejected"
		if len(a.ErrorCodes) > 0 {
			reason = a.ErrorCodes[0]
		}
		return Verdict{Reason: reason}, nil
	}
	if a.Hostname != "" && !s.hostAllowed(a.Hostname, b.Host) {
		return Verdict{Reason: "hostname"}, nil
	}
	if b.Action != "" && a.Action != "" && a.Action != b.Action {
		return Verdict{Reason: "action"}, nil
	}
	v := Verdict{Pass: true, Score: 1}
	if a.Score != nil {
		sc := *a.Score
		if sc < 0 || sc > 1 {
			return Verdict{}, errors.New(s.Name + " siteverify: a score outside [0, 1]")
		}
		if s.ScoreIsRisk {
			sc = 1 - sc
		}
		v.Score = sc
		v.Flag = sc < s.MinScore
	}
	return v, nil
}

func (s *Siteverify) hostAllowed(got, host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if len(s.Hostnames) == 0 {
		return strings.EqualFold(got, host)
	}
	for _, h := range s.Hostnames {
		if strings.EqualFold(got, h) {
			return true
		}
	}
	return false
}

var _ Verifier = (*Siteverify)(nil)
