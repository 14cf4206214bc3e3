// Package botcheckcaddy is the handlers' side of botcheck: the challenge_provider option of
// seckill_room, seckill_draw and seckill_token (its JSON and Caddyfile forms), the provider
// made from it at provision, the token read from the request, and the Redis the Privacy Pass
// tokens are spent in.
package botcheckcaddy

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/contract"
)

// Header carries the provider's token on the JSON protocol: the widget's response token
// (Turnstile, hCaptcha, reCAPTCHA) or a Privacy Pass token (its base64url, or the whole
// `PrivateToken token="..."` credential). A Privacy Pass token may come in Authorization
// instead, as a browser that speaks Privacy Pass sends it.
const Header = "X-Seckill-Challenge-Token"

// PrivacyPass is the provider name of Privacy Pass tokens.
const PrivacyPass = "privacypass"

// Provider is the challenge_provider option: a bot challenge every entry must pass
// (docs/room.md, "Bot challenge providers").
type Provider struct {
	// Name is the provider: turnstile, hcaptcha, recaptcha (through their siteverify APIs)
	// or privacypass (tokens of type 0x0002 checked here with the issuer's key).
	Name string `json:"name"`
	// SiteKey is the widget's public site key, which the page shows (turnstile, hcaptcha,
	// recaptcha).
	SiteKey string `json:"site_key,omitempty"`
	// Secret is the site's secret with the provider (turnstile, hcaptcha, recaptcha). Give
	// it from the environment: {env.TURNSTILE_SECRET}, read at provision, never written into
	// the adapted config.
	Secret string `json:"secret,omitempty"`
	// VerifyURL replaces the provider's siteverify endpoint (a proxy, a stand-in in tests).
	VerifyURL string `json:"verify_url,omitempty"`
	// WidgetScriptURL replaces the widget's script the room's and the draw's pages load (a
	// self-hosted copy; a stand-in in tests): the page's CSP allows its origin instead of the
	// provider's. Default: the provider's (turnstile, hcaptcha, recaptcha).
	WidgetScriptURL string `json:"widget_script_url,omitempty"`
	// Hostnames are the host names a siteverify answer may name. Default: the request's
	// host.
	Hostnames []string `json:"hostnames,omitempty"`
	// Action is the widget's action (Turnstile's data-action, reCAPTCHA's action): an
	// answer naming another action is refused. Default: none compared.
	Action string `json:"action,omitempty"`
	// MinScore flags entrants whose score (0 bot .. 1 human; hCaptcha's risk score is turned
	// around) is below it. A flagged entrant enters the room or the draw like anyone, and is
	// never admitted or drawn (docs/room.md, "The queue bots never leave"); seckill_token
	// lets him through. Default 0: nobody is flagged.
	MinScore float64 `json:"min_score,omitempty"`
	// OnFail is what a missing or failed token comes to at the room's and the draw's entry:
	// "refuse" (the default: 403 or 401 bot_challenge_required / bot_challenge_failed) or
	// "flag" (the entry is taken and flagged, answered like any other, never admitted nor
	// drawn: a bot is not told its token was bad). seckill_token always refuses.
	OnFail string `json:"on_fail,omitempty"`
	// IssuerName is the Privacy Pass issuer's server name (privacypass).
	IssuerName string `json:"issuer_name,omitempty"`
	// IssuerKey is the issuer's public key as its directory publishes it (token-key: the
	// base64url of the RSASSA-PSS SubjectPublicKeyInfo) (privacypass).
	IssuerKey string `json:"issuer_key,omitempty"`
	// ContextWindow is how long a Privacy Pass challenge lasts: a token is accepted in its
	// window and the next, and its nonce is kept as long. Default 1h.
	ContextWindow caddy.Duration `json:"context_window,omitempty"`
	// Timeout bounds one verification (the siteverify round trip, the spend in Redis).
	// Default 2s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// FailOpen lets entrants in unverified while the provider cannot be asked (a timeout, a
	// 5xx, a wrong secret). Default: fail closed, 503 unavailable with Retry-After.
	FailOpen bool `json:"fail_open,omitempty"`

	check  botcheck.Check
	logger *zap.Logger
}

// Provision makes the provider; rdb spends the Privacy Pass tokens, logger hears of a
// provider that cannot be asked (nil: nobody). No network I/O.
func (p *Provider) Provision(rdb redis.UniversalClient, logger *zap.Logger) error {
	p.logger = logger
	if p.logger == nil {
		p.logger = zap.NewNop()
	}
	repl := caddy.NewReplacer()
	secret := repl.ReplaceAll(p.Secret, "")
	if p.MinScore < 0 || p.MinScore > 1 {
		return fmt.Errorf("challenge_provider: min_score %v is outside [0, 1]", p.MinScore)
	}
	if p.OnFail != "" && p.OnFail != OnFailRefuse && p.OnFail != OnFailFlag {
		return fmt.Errorf("challenge_provider: on_fail is refuse or flag, not '%s'", p.OnFail)
	}
	if p.Timeout < 0 || p.ContextWindow < 0 {
		return errors.New("challenge_provider: timeout and context_window are positive durations")
	}
	p.check = botcheck.Check{Timeout: time.Duration(p.Timeout), FailOpen: p.FailOpen}
	if p.Name == PrivacyPass {
		if p.IssuerName == "" || p.IssuerKey == "" {
			return errors.New("challenge_provider privacypass: issuer_name and issuer_key are required")
		}
		der, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(repl.ReplaceAll(p.IssuerKey, ""), "="))
		if err != nil {
			return errors.New("challenge_provider privacypass: issuer_key is not base64url")
		}
		key, err := botcheck.ParseIssuerKey(der)
		if err != nil {
			return fmt.Errorf("challenge_provider privacypass: issuer_key: %w", err)
		}
		if rdb == nil {
			return errors.New("challenge_provider privacypass: the seckill app has no Redis to spend tokens in")
		}
		p.check.Verifier = &botcheck.PrivacyPass{IssuerName: p.IssuerName, Key: key,
			Window: time.Duration(p.ContextWindow), Spender: RedisSpender{Client: rdb}}
		return nil
	}
	sv, ok := botcheck.ProviderNamed(p.Name)
	if !ok {
		return fmt.Errorf("challenge_provider: unknown provider '%s' (turnstile, hcaptcha, recaptcha, privacypass)", p.Name)
	}
	if secret == "" {
		return fmt.Errorf("challenge_provider %s: secret is required", p.Name)
	}
	if p.VerifyURL != "" {
		u, err := url.Parse(p.VerifyURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("challenge_provider %s: verify_url '%s' is not an http(s) URL", p.Name, p.VerifyURL)
		}
		sv.URL = p.VerifyURL
	}
	p.check.Verifier = &botcheck.Siteverify{Provider: sv, Secret: secret, Hostnames: p.Hostnames,
		MinScore: p.MinScore, Client: http.DefaultClient}
	return nil
}

// Bindings of a request: the host as the client named it (Privacy Pass challenges name
// the origin with its port), the sale, the action, the client's address as Caddy resolved it.
func (p *Provider) binding(r *http.Request, sale string) botcheck.Binding {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	return botcheck.Binding{Host: strings.TrimSuffix(strings.ToLower(r.Host), ":443"), Sale: sale, Action: p.Action, RemoteIP: ip}
}

// Token is the provider's token on r: the Header, else (Privacy Pass) a PrivateToken
// credential in Authorization.
func (p *Provider) Token(r *http.Request) string {
	if t := r.Header.Get(Header); t != "" {
		return t
	}
	if a := r.Header.Get("Authorization"); p.Name == PrivacyPass && len(a) > 13 && strings.EqualFold(a[:13], "PrivateToken ") {
		return a
	}
	return ""
}

// Check runs the provider on an entry to sale: the outcome, and the refusal when it does not
// enter (its WWW-Authenticate, for Privacy Pass, set on w). A provider that cannot be asked
// is logged; the outcome says what the site's fail_open or fail_closed made of it. A nil
// Provider (no challenge_provider) lets every request in.
func (p *Provider) Check(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string) (botcheck.Outcome, handler.Refusal) {
	return p.run(ctx, w, r, sale, false)
}

// CheckEntry is Check for a handler that holds flagged entrants back (the room, the draw):
// with on_fail flag, a missing or failed token is not refused but comes to Flagged.
func (p *Provider) CheckEntry(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string) (botcheck.Outcome, handler.Refusal) {
	return p.run(ctx, w, r, sale, p != nil && p.OnFail == OnFailFlag)
}

// The values of on_fail.
const (
	OnFailRefuse = "refuse"
	OnFailFlag   = "flag"
)

func (p *Provider) run(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string, flagFailed bool) (botcheck.Outcome, handler.Refusal) {
	if p == nil {
		return botcheck.Passed, handler.Refusal{}
	}
	b := p.binding(r, sale)
	o, _, err := p.check.Run(ctx, p.Token(r), b)
	Challenges.WithLabelValues(p.Name, o.String()).Inc()
	if err != nil {
		p.logger.Warn("the bot challenge provider could not be asked", zap.String("provider", p.Name),
			zap.Stringer("outcome", o), zap.Error(err))
	}
	if flagFailed && (o == botcheck.Missing || o == botcheck.Failed) {
		return botcheck.Flagged, handler.Refusal{}
	}
	if o.Enters() {
		return o, handler.Refusal{}
	}
	status, code, challenge := p.check.Refusal(o, b)
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	return o, handler.Refusal{Status: status, Code: code, Message: messages[o]}
}

// Challenges counts the verifications by provider and outcome (passed, flagged, unchecked,
// missing, failed, unavailable: what the provider's answer came to, before on_fail flag turns a
// missing or failed one into a flag). The handlers with a challenge_provider register it.
var Challenges = metric.Subsystem("bot").CounterVec("challenges_total",
	"Bot challenge verifications (challenge_provider) by provider and outcome: passed, flagged (a score below min_score), "+
		"unchecked (the provider could not be asked, fail_open), missing, failed, unavailable (fail_closed). Never per poll.",
	"provider", "outcome")

var messages = map[botcheck.Outcome]string{
	botcheck.Missing:     "this sale asks for a bot challenge: solve it and send its token in " + Header,
	botcheck.Failed:      "the bot challenge's token is not good (spent, expired or made for another site or sale): solve it again",
	botcheck.Unavailable: "the bot challenge cannot be checked now; try again shortly",
}

// RedisSpender spends Privacy Pass nonces with SET NX PX under the sale's hash tag
// (contract.PrivacyPassKey): exactly one of any number of gateways spending the same nonce
// at once is told it was fresh.
type RedisSpender struct {
	Client redis.Cmdable
}

// Spend implements botcheck.Spender.
func (s RedisSpender) Spend(ctx context.Context, sale string, nonce [32]byte, ttl time.Duration) (bool, error) {
	return s.Client.SetNX(ctx, contract.PrivacyPassKey(sale, hex.EncodeToString(nonce[:])), 1, ttl).Result()
}

// Interface guard
var _ botcheck.Spender = RedisSpender{}
