// Package token is the `seckill_token` handler: it issues one-time purchase tokens, signed,
// bound to a user and a sale, and consumed by seckill_gate inside its purchase script.
//
// It closes the holes of the classic designs. The "hidden seckill path" of well-known Java
// projects is compared but never consumed, so it is reusable; tokens not bound to a user can
// be shared or sold; tokens checked in a separate round trip race with the purchase. Here the
// token's MAC binds it to (sale, user), the gate verifies it in Go without Redis, and the
// gate's script deletes the nonce atomically with the purchase.
//
// One request is one Redis round trip (lua/token_issue.lua): the script decides the sale
// window with Redis TIME, computes the expiry, and records the nonce in the sale's tokens
// hash (field = user id, value = tokenformat.StoreValue). The format of the token itself is in
// caddymodule/tokenformat. docs/token.md has the whole story.
//
// The issuing decision (core.Decider, its Outcomes and the Store port) is the package
// token/core, which imports no Caddy; this package turns requests into it and its Results
// into answers and metrics.
package token

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpophttp"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/internal/placeholder"
	"github.com/seckilledge/seckill/caddymodule/token/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
)

func init() {
	caddy.RegisterModule(Issuer{})
}

// Defaults of the optional fields.
const (
	DefaultTTL        = 2 * time.Minute
	DefaultLeadTime   = 5 * time.Minute
	DefaultTimeout    = time.Second
	DefaultRetryAfter = time.Second
)

// Issuer is the `seckill_token` handler. It answers every request itself (it never calls the
// next handler): 200 `{"token","expires_at"}` or a JSON refusal with the contract's code.
type Issuer struct {
	// sale, user.
	handler.Subject

	// share is the issuer's place in a dispatched route (handler.Dispatch), if it stands in one.
	share *handler.Share

	// How long a token lives: from the start of the sale for a token taken before it, from
	// the moment of issue once the sale has started; never past the end of the sale.
	// Default 2m.
	TTL caddy.Duration `json:"ttl,omitempty"`

	// How long before the start of the sale tokens are issued. Earlier requests get 403
	// not_started. Default 5m; 0 issues tokens only once the sale has started.
	LeadTime *caddy.Duration `json:"lead_time,omitempty"`

	// RequireAdmission: for a sale with a waiting room (seckill_room, docs/room.md), a user
	// without a live admission gets 403 not_admitted instead of a token. Sales without a room
	// are unaffected. Checked inside token_issue.lua, in the same Redis round trip.
	RequireAdmission bool `json:"require_admission,omitempty"`

	// Retry-After sent with 503. Default 1s (rounded up to whole seconds).
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`

	// timeout (default 1s), max_pending, handle_errors.
	handler.Limits

	// device_binding (off, optional, required) and proof_max_age: with a DPoP proof in the
	// request (caddymodule/dpop), the token is bound to the proof's key (format version 2)
	// and seckill_gate spends it only with a fresh proof of that key; required issues none
	// without a proof.
	dpophttp.Settings

	// A bot challenge every token request must pass: turnstile, hcaptcha, recaptcha or
	// privacypass, with fail_open or fail_closed (docs/room.md, "Bot challenge providers").
	// For sales without a waiting room or draw, whose entry checks it instead. Default: none.
	ChallengeProvider *botcheckcaddy.Provider `json:"challenge_provider,omitempty"`

	core   *core.Decider
	logger *zap.Logger
	refuse handler.Writer
	// sale and user are Sale and User resolved at setup (a header or a variable read
	// directly, not through the replacer).
	sale, user placeholder.Value
}

// CaddyModule returns the Caddy module information.
func (Issuer) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Issuer]("http.handlers.seckill_token")
}

// Provision sets defaults and takes the app's Redis client and keyring. No network I/O.
func (h *Issuer) Provision(ctx caddy.Context) error {
	h.share = new(handler.Share)
	h.logger = edge.SampledLogger(ctx.Logger())
	appIface, err := ctx.App("seckill")
	if err != nil {
		return fmt.Errorf("seckill_token: the seckill app: %w", err)
	}
	app := appIface.(*caddymodule.App)
	if _, err := h.Subject.Inherit(ctx); err != nil {
		return fmt.Errorf("seckill_token: %w", err)
	}
	kr := app.Keyring()
	if kr == nil {
		return errors.New("seckill_token: no signing key: set token_keys in the seckill global option (e.g. token_keys { k1 {env.SECKILL_TOKEN_KEY} })")
	}
	if h.ChallengeProvider != nil {
		if err := h.ChallengeProvider.Provision(app.RedisClient(), h.logger); err != nil {
			return fmt.Errorf("seckill_token: %w", err)
		}
	}
	h.setup(app.RedisClient(), kr)
	if c, ok := app.RedisClient().(*redis.Client); ok {
		// A single Redis: the scripts go through the client's shared deferred pipeliner and
		// are awaited on the request's goroutine (edge.Caller.Inline), no goroutine per issue.
		// (A Cluster keeps the pooled calls.)
		if ap, err := c.AsyncAutoPipeline(); err == nil {
			h.core.Store = core.RedisStore{R: ap, Sub: ap}
			h.core.Caller.Inline = true
		}
	}
	registerMetrics(ctx.GetMetricsRegistry())
	return nil
}

// setup sets the defaults and builds the deciding core over rdb.
func (h *Issuer) setup(rdb redis.Scripter, kr *tokenformat.Keyring) {
	h.SetDefaults()
	if h.TTL == 0 {
		h.TTL = caddy.Duration(DefaultTTL)
	}
	if h.LeadTime == nil {
		lead := caddy.Duration(DefaultLeadTime)
		h.LeadTime = &lead
	}
	if h.RetryAfter <= 0 {
		h.RetryAfter = caddy.Duration(DefaultRetryAfter)
	}
	if h.logger == nil {
		h.logger = zap.NewNop()
	}
	h.refuse = h.Writer(0)
	h.sale, h.user = placeholder.Compile(h.Sale), placeholder.Compile(h.User)
	h.core = &core.Decider{
		Store:    core.RedisStore{R: rdb},
		Caller:   h.Caller(DefaultTimeout),
		Shards:   new(caddymodule.ShardCounts),
		Keyring:  kr,
		NewNonce: tokenformat.NewNonce,
		TTL:      time.Duration(h.TTL),
		LeadTime: time.Duration(*h.LeadTime),

		RequireAdmission: h.RequireAdmission,
	}
}

// value is tpl as provisioned (v), or compiled now for a handler set up without setup.
func value(tpl string, v placeholder.Value) placeholder.Value {
	if v.Template() == tpl {
		return v
	}
	return placeholder.Compile(tpl)
}

// Validate checks the configuration.
func (h *Issuer) Validate() error {
	if time.Duration(h.TTL) < time.Second {
		return fmt.Errorf("seckill_token: ttl %v: at least 1s (tokens carry whole seconds)", time.Duration(h.TTL))
	}
	if *h.LeadTime < 0 {
		return fmt.Errorf("seckill_token: lead_time must not be negative")
	}
	if err := h.Settings.Validate(); err != nil {
		return fmt.Errorf("seckill_token: %w", err)
	}
	return nil
}

// ServeHTTP issues a token or refuses. Standing in a dispatched route (handler.Dispatch), it
// passes every request but a token's to next.
func (h *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.share.Passes(r) {
		return next.ServeHTTP(w, r)
	}
	return h.ServeDecision(w, r, nil)
}

// Paths is what the issuer answers in a dispatched route: {prefix}/{sale}/token (any method:
// anything but POST is answered 405).
func (h *Issuer) Paths() (string, []handler.SharedPath) {
	return h.Prefix, []handler.SharedPath{{Rest: "token"}}
}

// Share places the issuer in its route's dispatch (caddymodule.App, at start).
func (h *Issuer) Share(d *handler.Dispatch, i int) { h.share.Set(d, i) }

// ServeDecision issues a token or refuses, with joint, the zones of the throttle right before
// the issuer in its route (nil for none; handler.Joint), in its script call. The zones are
// settled on every path, before anything of the issuer's is counted.
func (h *Issuer) ServeDecision(w http.ResponseWriter, r *http.Request, joint handler.Joint) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	start := time.Now()
	var res core.Result
	var ref handler.Refusal
	switch pathRef, canonical := handler.CheckRequest(r); {
	case r.Method != http.MethodPost:
		res = core.Result{Outcome: core.MethodNotAllowed}
		w.Header()["Allow"] = []string{http.MethodPost}
	case !canonical:
		// The sale placeholder reads the raw path, the routes matched the cleaned one.
		res, ref = core.Result{Outcome: core.BadRequest}, pathRef
	default:
		jkt, pref, ok := h.bindTo(r)
		if !ok {
			res, ref = core.Result{Outcome: ProofRefused}, pref
			break
		}
		sale := value(h.Sale, h.sale).Get(r, repl)
		if o, bref := h.ChallengeProvider.Check(r.Context(), w, r, sale); !o.Enters() {
			res, ref = core.Result{Outcome: BotRefused}, bref
			break
		}
		var err error
		req := core.Request{Sale: sale, User: value(h.User, h.user).Get(r, repl), JKT: jkt}
		if joint != nil {
			req.Zones = joint
		}
		res, err = h.core.Issue(r.Context(), req)
		if err != nil {
			if errors.Is(err, edge.ErrShed) {
				shed.Inc()
			}
			if r.Context().Err() == nil {
				h.logger.Warn("no token issued; answering unavailable", zap.Error(err))
			}
		}
	}
	if joint != nil && joint.Alone(r.Context()) {
		// The zones refused (in the script call, or alone when no script ran).
		return joint.Refuse()
	}
	switch res.Outcome {
	case core.Misconfigured:
		// The operator must hear of it: the sale is closed on this gateway until its config
		// checks admissions. (Sampled logger: a rush of buyers writes a few lines a second.)
		h.logger.Error("a sale with a waiting room reached seckill_token without require_admission; refusing its tokens (503 unavailable)",
			zap.String("sale", repl.ReplaceAll(h.Sale, "")))
	case core.RoomMissing:
		h.logger.Error("a sale with a waiting room has no room state in Redis (preheat it again); refusing its tokens (503 unavailable)",
			zap.String("sale", repl.ReplaceAll(h.Sale, "")))
	case core.DrawMissing:
		h.logger.Error("a draw sale reached the token script without the draw's entries key (a gateway out of date with lua/token_issue.lua); refusing its tokens (503 unavailable)",
			zap.String("sale", repl.ReplaceAll(h.Sale, "")))
	}
	observe(res.Outcome, time.Since(start))
	repl.Set("http.seckill.token.outcome", string(res.Outcome))
	if res.Outcome == core.Issued {
		repl.Set("http.seckill.token.expires_at", res.Expires.UTC().Format(time.RFC3339))
		core.WriteIssued(w, res)
		return nil
	}
	if ref.Code == "" {
		ref = res.Refusal()
	}
	ref.OrderID = res.OrderID
	ref.RetryAfter = time.Duration(h.RetryAfter)
	return h.refuse.Write(w, ref)
}

// BotRefused is the outcome (metric label, {http.seckill.token.outcome}) of a request refused
// by the challenge provider: no token, a bad one, or the provider unavailable on a site that
// fails closed (the answer's code says which).
const BotRefused core.Outcome = "bot_refused"

// ProofRefused is the outcome (metric label, {http.seckill.token.outcome}) of a request whose
// DPoP proof was refused before anything was decided: missing under device_binding required,
// malformed, for another URL, too old (the answer's code says which).
const ProofRefused core.Outcome = hcore.OutcomeProofRefused

// bindTo returns the thumbprint the token is to be bound to: the key of the request's proof
// ("" for a bearer token when binding is off, or optional and no proof came), or the refusal
// of a proof that does not verify (ok false).
func (h *Issuer) bindTo(r *http.Request) (jkt string, ref handler.Refusal, ok bool) {
	if !h.Enabled() || (h.DeviceBinding == dpop.Optional && !dpophttp.HasProof(r)) {
		return "", ref, true
	}
	p, err := h.Check(r, "", time.Now())
	if err != nil {
		ref, _ = dpop.Refusal(err)
		return "", ref, false
	}
	return p.JKT, ref, true
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Issuer)(nil)
	_ caddy.Validator             = (*Issuer)(nil)
	_ caddyhttp.MiddlewareHandler = (*Issuer)(nil)
	_ handler.Decision            = (*Issuer)(nil)
)
