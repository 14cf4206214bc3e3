// Package botcheck decides whether an entrant passed a bot challenge: a CAPTCHA provider's
// token checked through its siteverify API (Cloudflare Turnstile, hCaptcha, Google reCAPTCHA;
// one HTTP shape, Siteverify) or a Privacy Pass token (RFC 9577, token type 0x0002 of RFC 9578)
// checked here with its issuer's public key (PrivacyPass). It knows nothing of Caddy: the
// handlers' glue (botcheckcaddy) reads the options and gives it a Redis to spend tokens in.
//
// A provider answers with a Verdict, or with an error, which means only "the provider could
// not be asked" (a timeout, a 5xx, an answer that is not its JSON): what that does to the
// entrant is the site's choice (Check.FailOpen), never the provider's.
package botcheck

import (
	"context"
	"net/http"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// Binding is what a token must have been made for: the page's host, the sale, the action.
type Binding struct {
	// Host is the host the page was served on, as the client names it (the request's Host:
	// a name, and a port other than 443): the origin a Privacy Pass challenge names; without
	// its port, the hostname a siteverify answer must name (unless Hostnames say otherwise).
	Host string
	// Sale is the sale entered: a Privacy Pass token is bound to it.
	Sale string
	// Action is what the widget was run for ("enter"): a provider's answer that names
	// another action is refused. Empty: no action is compared.
	Action string
	// RemoteIP is the client's address, handed to siteverify providers (remoteip) as they
	// ask. It is never a key of anything here: a verdict is cached per ticket, not per address.
	RemoteIP string
}

// Verdict is a provider's word on one token.
type Verdict struct {
	// Pass: the token is genuine, fresh (not spent before) and made for the Binding.
	Pass bool
	// Flag: the token passed, but the provider scores its holder as a likely bot (Score
	// below the site's minimum). A flagged entrant is let in, and the handler is told.
	Flag bool
	// Score is the provider's likelihood that the holder is human, from 0 to 1 (a provider
	// that scores risk instead, hCaptcha, is turned around); 1 when the provider gives none.
	Score float64
	// Reason says why a token did not pass: the provider's first error code, or one of ours
	// ("missing", "malformed", "hostname", "action", "unknown_key", "foreign", "forged",
	// "spent"). Empty when it passed. For logs; never shown to the client.
	Reason string
}

// Verifier checks one token. An error means the provider could not be asked (the token is
// neither good nor bad); a bad token is a Verdict without Pass and a nil error.
type Verifier interface {
	Verify(ctx context.Context, token string, b Binding) (Verdict, error)
}

// Outcome is what an entry with a token comes to.
type Outcome uint8

// The outcomes of Check.Run.
const (
	// Passed: enter.
	Passed Outcome = iota
	// Flagged: enter; the provider scored the entrant below the site's minimum (what the
	// handler makes of it is its own: today the room and the draw treat it as Passed).
	Flagged
	// Unchecked: the provider could not be asked and the site fails open: enter unverified.
	Unchecked
	// Missing: no token; refused, contract.CodeBotChallengeRequired (Check.Refusal).
	Missing
	// Failed: the token is not good (forged, spent, for another site or action); refused,
	// contract.CodeBotChallengeFailed.
	Failed
	// Unavailable: the provider could not be asked and the site fails closed; refused, 503
	// contract.CodeUnavailable (the client tries again after Retry-After, with a new token).
	Unavailable
)

var outcomeNames = [...]string{"passed", "flagged", "unchecked", "missing", "failed", "unavailable"}

// String is the outcome's name, a bounded metrics label.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Enters reports whether the entrant goes in (flagged and unchecked entrants too).
func (o Outcome) Enters() bool { return o <= Unchecked }

// Challenger is a Verifier that names its challenge in an HTTP header (Privacy Pass): a
// client that meets it fetches a token for it and comes back with the token.
type Challenger interface {
	WWWAuthenticate(b Binding) string
}

// Refusal is the status, code and WWW-Authenticate header (empty for none) of a refused
// outcome; 0 and "" for one that enters. A missing or bad token is 403, or 401 with the
// challenge when the provider has one to name (a browser that speaks Privacy Pass answers it
// by itself); an unavailable provider is 503.
func (c Check) Refusal(o Outcome, b Binding) (status int, code, wwwAuthenticate string) {
	switch o {
	case Missing, Failed:
		code = contract.CodeBotChallengeRequired
		if o == Failed {
			code = contract.CodeBotChallengeFailed
		}
		if ch, ok := c.Verifier.(Challenger); ok {
			return http.StatusUnauthorized, code, ch.WWWAuthenticate(b)
		}
		return http.StatusForbidden, code, ""
	case Unavailable:
		return http.StatusServiceUnavailable, contract.CodeUnavailable, ""
	}
	return 0, "", ""
}

// DefaultTimeout bounds one verification when Check.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// MaxTokenLen is the longest token looked at: the providers' tokens are at most 2 048
// characters and a Privacy Pass authorization about 500; a longer one is malformed, and
// refused without asking anyone.
const MaxTokenLen = 4096

// Check is a site's challenge: its provider, how long it may take, and what an unavailable
// provider means.
type Check struct {
	Verifier Verifier
	// Timeout bounds one verification (the provider's round trip, the spend in Redis).
	// Default DefaultTimeout.
	Timeout time.Duration
	// FailOpen lets entrants in unverified when the provider cannot be asked (Unchecked);
	// false refuses them with 503 (Unavailable) until it can.
	FailOpen bool
}

// Run checks the token of one entry. The verdict and the provider's error are returned for
// logs and metrics; the outcome is the decision.
func (c Check) Run(ctx context.Context, token string, b Binding) (Outcome, Verdict, error) {
	if token == "" {
		return Missing, Verdict{Reason: "missing"}, nil
	}
	if len(token) > MaxTokenLen {
		return Failed, Verdict{Reason: "malformed"}, nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := c.Verifier.Verify(ctx, token, b)
	switch {
	case err != nil && c.FailOpen:
		return Unchecked, Verdict{}, err
	case err != nil:
		return Unavailable, Verdict{}, err
	case !v.Pass:
		return Failed, v, nil
	case v.Flag:
		return Flagged, v, nil
	}
	return Passed, v, nil
}
