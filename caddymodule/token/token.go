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
// hash (field = user id, value = tokens.StoreValue). The format of the token itself is in
// caddymodule/tokens. docs/token.md has the whole story.
package token

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/tokens"
	"github.com/seckilledge/seckill/contract"
)

func init() {
	caddy.RegisterModule(Issuer{})
}

// Defaults of the optional fields.
const (
	DefaultSale       = "{http.request.uri.path.1}"
	DefaultUser       = "{http.auth.user.id}"
	DefaultTTL        = 2 * time.Minute
	DefaultLeadTime   = 5 * time.Minute
	DefaultTimeout    = time.Second
	DefaultRetryAfter = time.Second
)

// Issuer is the `seckill_token` handler. It answers every request itself (it never calls the
// next handler): 200 `{"token","expires_at"}` or a JSON refusal with the contract's code.
type Issuer struct {
	// The sale id, usually a placeholder. Default: {http.request.uri.path.1}, the second path
	// segment (/seckill/<sale>/token). Ids are 1 to 64 characters of [A-Za-z0-9_-]; anything
	// else is refused with 400 bad_request.
	Sale string `json:"sale,omitempty"`

	// The user id, usually a placeholder set by an authentication module. Default:
	// {http.auth.user.id}. The demo Caddyfile uses {http.request.header.X-User-ID}. An empty
	// value is refused with 401 unauthenticated.
	User string `json:"user,omitempty"`

	// How long a token lives: from the start of the sale for a token taken before it, from
	// the moment of issue once the sale has started; never past the end of the sale.
	// Default 2m.
	TTL caddy.Duration `json:"ttl,omitempty"`

	// How long before the start of the sale tokens are issued. Earlier requests get 403
	// not_started. Default 5m; 0 issues tokens only once the sale has started.
	LeadTime *caddy.Duration `json:"lead_time,omitempty"`

	// How long the Redis round trip may take before the handler answers 503 unavailable.
	// Default 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// Retry-After sent with 503. Default 1s (rounded up to whole seconds).
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`

	// The most token scripts this handler may have waiting on Redis at once. Beyond it the
	// handler answers 503 unavailable with Retry-After at once, without touching Redis, so
	// an overloaded or stalled Redis costs fast refusals and bounded memory. Default 4096;
	// -1 disables the bound.
	MaxPending int `json:"max_pending,omitempty"`

	pending    *caddymodule.Pending
	scripter   redis.Scripter
	shards     *caddymodule.ShardCounts
	keyring    *tokens.Keyring
	logger     *zap.Logger
	retryAfter string
}

// CaddyModule returns the Caddy module information.
func (Issuer) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.seckill_token",
		New: func() caddy.Module { return new(Issuer) },
	}
}

// Provision sets defaults and takes the app's Redis client and keyring. No network I/O.
func (h *Issuer) Provision(ctx caddy.Context) error {
	h.logger = caddymodule.SampledLogger(ctx.Logger())
	h.setDefaults()
	appIface, err := ctx.App("seckill")
	if err != nil {
		return fmt.Errorf("seckill_token: the seckill app: %w", err)
	}
	app := appIface.(*caddymodule.App)
	h.keyring = app.Keyring()
	if h.keyring == nil {
		return errors.New("seckill_token: no signing key: set token_keys in the seckill global option (e.g. token_keys { k1 {env.SECKILL_TOKEN_KEY} })")
	}
	h.scripter = app.RedisClient()
	registerMetrics(ctx.GetMetricsRegistry())
	return nil
}

func (h *Issuer) setDefaults() {
	if h.shards == nil {
		h.shards = new(caddymodule.ShardCounts)
	}
	if h.Sale == "" {
		h.Sale = DefaultSale
	}
	if h.User == "" {
		h.User = DefaultUser
	}
	if h.TTL == 0 {
		h.TTL = caddy.Duration(DefaultTTL)
	}
	if h.LeadTime == nil {
		lead := caddy.Duration(DefaultLeadTime)
		h.LeadTime = &lead
	}
	if h.MaxPending == 0 {
		h.MaxPending = caddymodule.DefaultMaxPending
	}
	h.pending = caddymodule.NewPending(h.MaxPending)
	if h.Timeout <= 0 {
		h.Timeout = caddy.Duration(DefaultTimeout)
	}
	if h.RetryAfter <= 0 {
		h.RetryAfter = caddy.Duration(DefaultRetryAfter)
	}
	h.retryAfter = strconv.Itoa(int((time.Duration(h.RetryAfter) + time.Second - 1) / time.Second))
}

// Validate checks the configuration.
func (h *Issuer) Validate() error {
	if time.Duration(h.TTL) < time.Second {
		return fmt.Errorf("seckill_token: ttl %v: at least 1s (tokens carry whole seconds)", time.Duration(h.TTL))
	}
	if *h.LeadTime < 0 {
		return fmt.Errorf("seckill_token: lead_time must not be negative")
	}
	return nil
}

// ServeHTTP issues a token or refuses.
func (h *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	start := time.Now()
	res := h.issue(r, repl)
	observe(res.Outcome, time.Since(start))
	repl.Set("http.seckill.token.outcome", string(res.Outcome))
	if res.Outcome == Issued {
		repl.Set("http.seckill.token.expires_at", res.Expires.UTC().Format(time.RFC3339))
	}
	writeResult(w, res, h.retryAfter)
	return nil
}

func (h *Issuer) issue(r *http.Request, repl *caddy.Replacer) Result {
	if r.Method != http.MethodPost {
		return Result{Outcome: MethodNotAllowed}
	}
	user := repl.ReplaceAll(h.User, "")
	if user == "" {
		return Result{Outcome: Unauthenticated}
	}
	sale := repl.ReplaceAll(h.Sale, "")
	if !contract.ValidID(sale) || !contract.ValidID(user) {
		return Result{Outcome: BadRequest}
	}
	nonce, err := tokens.NewNonce()
	if err != nil {
		h.logger.Error("no randomness for a token nonce", zap.Error(err))
		return Result{Outcome: Unavailable}
	}
	if !h.pending.TryAcquire() {
		shed.Inc()
		return Result{Outcome: Unavailable}
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(h.Timeout))
	// A sharded sale's token lives in the user's shard, where the gate looks for it. Both
	// calls of a sale seen sharded for the first time count as one pending decision.
	k := h.shards.Of(sale)
	reply, err := h.runIssue(ctx, contract.UserShardID(sale, user, k), user, nonce)
	if err == nil && k == 1 {
		if sk, ok := shardedReply(reply); ok {
			h.shards.Learn(sale, sk)
			k = h.shards.Of(sale)
			reply, err = h.runIssue(ctx, contract.UserShardID(sale, user, k), user, nonce)
		}
	}
	cancel()
	h.pending.Release()
	if err != nil {
		if r.Context().Err() == nil {
			h.logger.Warn("token script failed", zap.String("sale", sale), zap.Error(err))
		}
		return Result{Outcome: Unavailable}
	}
	res, err := parseReply(reply)
	if err != nil {
		h.logger.Error("token script: unexpected reply", zap.Any("reply", reply), zap.Error(err))
		return Result{Outcome: Unavailable}
	}
	if res.Outcome == UnknownSale && k > 1 {
		h.shards.Forget(sale) // the shard is gone: learn the sale again next time
	}
	if res.Outcome != Issued {
		return res
	}
	res.Token, res.Claims, err = h.keyring.Sign(sale, user, nonce, res.Expires)
	if err != nil {
		h.logger.Error("signing a token", zap.Error(err))
		return Result{Outcome: Unavailable}
	}
	return res
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Issuer)(nil)
	_ caddy.Validator             = (*Issuer)(nil)
	_ caddyhttp.MiddlewareHandler = (*Issuer)(nil)
)
