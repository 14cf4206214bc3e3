// Package gate is the `seckill_gate` HTTP handler: the purchase decision at the edge, in one
// atomic Redis script (sale window, one-time token, one unit per user, stock, outbox entry).
// The `seckill` app's relay (package relay) hands every accepted order from the outbox to
// RabbitMQ with publisher confirms.
//
// A winner is answered 202 only after the script wrote its outbox entry, so an instance
// killed right after answering loses nobody: another instance's relay claims the entry.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/tokens"
	"github.com/seckilledge/seckill/contract"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(Gate{})
}

// now is the gateway clock, used only for token expiry (the sale window is decided by Redis
// TIME inside the script). Tests replace it.
var now = time.Now

// Gate is the `seckill_gate` handler. It answers every request itself (it never calls the next
// handler): 202 with the order id, or a JSON refusal with the contract's code.
type Gate struct {
	// The sale id, usually a placeholder. Default: {http.request.uri.path.1}, the second
	// path segment (/seckill/<sale>/buy).
	Sale string `json:"sale,omitempty"`

	// The user id, usually a placeholder set by an authentication module. Default:
	// {http.auth.user.id}. The demo Caddyfile uses {http.request.header.X-User-ID}. An empty
	// value is refused with 401 unauthenticated.
	User string `json:"user,omitempty"`

	// Require a one-time purchase token (issued by seckill_token). Its signature and expiry
	// are checked here with the app's token_keys; its single use inside the decision script.
	RequireToken bool `json:"require_token,omitempty"`

	// Where the token is read from. Default: {http.request.header.X-Seckill-Token}.
	Token string `json:"token,omitempty"`

	// How long a decision may take before the gate answers 503 unavailable (it fails closed:
	// it never accepts without Redis). Default 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// Retry-After sent with 503. Default 1s (rounded up to whole seconds).
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`

	// The most decisions this handler may have waiting on Redis at once (counting those whose
	// request already gave up at the timeout, until Redis answers them). Beyond it the gate
	// sheds: 503 unavailable with Retry-After at once, without touching Redis, so an overload
	// or a stalled Redis costs fast refusals and bounded memory instead of a growing pile of
	// queued scripts. A shed request was never decided: retrying it is always safe.
	// Default 4096; -1 disables the bound.
	MaxPending int `json:"max_pending,omitempty"`

	// How decisions reach Redis: "pipelined" (default) batches the scripts of concurrent
	// requests into one round trip (go-redis automatic pipelining); "pooled" sends each on its
	// own pooled connection. See BENCHMARKS.md for what each costs.
	Redis string `json:"redis,omitempty"`

	// Deprecated: configure the relay in the seckill app (`seckill { relay { ... } }`, JSON
	// apps.seckill.relay). Still honoured, with a warning, when the app has no relay settings
	// (the first seckill_gate's apply).
	Relay *RelayConfig `json:"relay,omitempty"`

	app        *caddymodule.App
	scripter   redis.Scripter
	events     *caddymodule.SaleEvents
	keyring    *tokens.Keyring
	shards     *caddymodule.ShardCounts
	eventsApp  *caddyevents.App
	ctx        caddy.Context
	logger     *zap.Logger
	retryAfter string
	pending    *caddymodule.Pending
}

// CaddyModule returns the Caddy module information.
func (Gate) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.seckill_gate",
		New: func() caddy.Module { return new(Gate) },
	}
}

// Redis modes.
const (
	RedisPipelined = "pipelined"
	RedisPooled    = "pooled"
)

// Provision sets defaults and takes the app's shared clients. No network I/O.
func (g *Gate) Provision(ctx caddy.Context) error {
	g.ctx = ctx
	g.logger = caddymodule.SampledLogger(ctx.Logger())
	if g.Sale == "" {
		g.Sale = "{http.request.uri.path.1}"
	}
	if g.User == "" {
		g.User = "{http.auth.user.id}"
	}
	if g.Token == "" {
		g.Token = "{http.request.header.X-Seckill-Token}"
	}
	if g.Timeout <= 0 {
		g.Timeout = caddy.Duration(time.Second)
	}
	if g.RetryAfter <= 0 {
		g.RetryAfter = caddy.Duration(time.Second)
	}
	if g.MaxPending == 0 {
		g.MaxPending = caddymodule.DefaultMaxPending
	}
	g.pending = caddymodule.NewPending(g.MaxPending)
	if g.Redis == "" {
		g.Redis = RedisPipelined
	}
	g.retryAfter = strconv.Itoa(int((time.Duration(g.RetryAfter) + time.Second - 1) / time.Second))

	appIface, err := ctx.App("seckill")
	if err != nil {
		return fmt.Errorf("seckill_gate: the seckill app: %w", err)
	}
	g.app = appIface.(*caddymodule.App)
	if g.RequireToken {
		g.keyring = g.app.Keyring()
		if g.keyring == nil {
			return errors.New("seckill_gate: require_token needs token_keys in the seckill global option")
		}
	}
	client := g.app.RedisClient()
	g.scripter = client
	if g.Redis == RedisPipelined {
		// One pipeliner per client, shared and closed with it. Lazy: no I/O here.
		ap, err := client.AutoPipeline()
		if err != nil {
			g.logger.Warn("automatic pipelining unavailable; using pooled calls", zap.Error(err))
		} else {
			g.scripter = ap
		}
	}
	g.events = g.app.SaleEvents()
	g.shards = new(caddymodule.ShardCounts)
	if ev, err := ctx.App("events"); err == nil {
		g.eventsApp, _ = ev.(*caddyevents.App)
	}
	g.app.UseRelay(g.Relay) // this config accepts orders: the app runs its relay
	caddymodule.Register(ctx.GetMetricsRegistry(), collectors()...)
	return nil
}

// Validate checks the configuration.
func (g *Gate) Validate() error {
	if g.Redis != RedisPipelined && g.Redis != RedisPooled {
		return fmt.Errorf("seckill_gate: redis must be %q or %q, not %q", RedisPipelined, RedisPooled, g.Redis)
	}
	return nil
}

// ServeHTTP decides the purchase and writes the answer.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	sale := repl.ReplaceAll(g.Sale, "")
	user := repl.ReplaceAll(g.User, "")
	var token string
	if g.RequireToken {
		token = repl.ReplaceAll(g.Token, "")
	}
	v, known := g.Decide(r.Context(), sale, user, token)

	label := ""
	if known {
		label = sale
	}
	countDecision(label, v.Outcome)
	repl.Set("http.seckill.outcome", string(v.Outcome))
	repl.Set("http.seckill.order_id", v.OrderID)
	if g.eventsApp != nil && g.eventsApp.ShouldEmit(EventName) {
		ctx := g.ctx
		ctx.Context = r.Context()
		g.eventsApp.Emit(ctx, EventName, map[string]any{"sale": sale, "user": user, "outcome": string(v.Outcome), "order_id": v.OrderID})
	}
	writeVerdict(w, v, g.retryAfter)
	return nil
}

// EventName is the Caddy event emitted for every decision; its data has sale, user, outcome
// and order_id.
const EventName = "seckill_decision"

// CheckRequest validates the identities of a purchase before anything else: no user is 401,
// a malformed sale or user id is 400. It returns "" when the request may proceed.
func CheckRequest(sale, user string) Outcome {
	switch {
	case user == "":
		return Unauthenticated
	case !contract.ValidID(user), !contract.ValidID(sale):
		return BadRequest
	}
	return ""
}

// Decide makes the decision for one request. known reports whether the sale is known to exist
// (so it may label metrics).
func (g *Gate) Decide(ctx context.Context, sale, user, token string) (v Verdict, known bool) {
	if o := CheckRequest(sale, user); o != "" {
		return Verdict{Outcome: o}, false
	}
	// A sharded sale is decided on the user's shard (target is the shard id); an unsharded
	// one, or one not known to be sharded yet, on the sale's own keys (target == sale).
	k := g.shards.Of(sale)
	target := contract.UserShardID(sale, user, k)
	// After sell-out the answer comes from memory: no token check, no Redis. For a sharded
	// sale the flag is the user's shard's: another shard may still have units.
	if g.events.SoldOut(target) {
		return Verdict{Outcome: SoldOut}, true
	}
	p := Purchase{Sale: target, User: user}
	if g.RequireToken {
		if token == "" {
			return Verdict{Outcome: InvalidToken}, false
		}
		c, err := g.keyring.Verify(token, sale, user, now())
		switch {
		case errors.Is(err, tokens.ErrExpired):
			return Verdict{Outcome: TokenExpired}, false
		case err != nil:
			return Verdict{Outcome: InvalidToken}, false
		}
		p.TokenValue = tokens.StoreValue(c)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Verdict{Outcome: Unavailable}, false
	}
	p.OrderID = id.String()

	gen := g.events.Generation(target)
	start := time.Now()
	v, err = g.run(ctx, p)
	scriptSeconds.Observe(time.Since(start).Seconds())
	if err == nil && v.Outcome == Sharded && k == 1 {
		// First purchase of a sharded sale seen by this instance: learn its shard count
		// (it never changes) and decide on the user's shard.
		g.shards.Learn(sale, v.Shards)
		k = g.shards.Of(sale)
		target = contract.UserShardID(sale, user, k)
		if g.events.SoldOut(target) {
			return Verdict{Outcome: SoldOut}, true
		}
		p.Sale = target
		gen = g.events.Generation(target)
		start = time.Now()
		v, err = g.run(ctx, p)
		scriptSeconds.Observe(time.Since(start).Seconds())
	}
	if err == nil && v.Outcome == Sharded {
		err = errReply // a shard never answers sharded
	}
	if err != nil {
		if ctx.Err() == nil {
			g.logger.Warn("decision failed; answering unavailable", zap.String("sale", sale), zap.Error(err))
		}
		return Verdict{Outcome: Unavailable}, false
	}
	switch v.Outcome {
	case Accepted:
		g.app.NotifyRelay(target) // the outbox the entry is in: the shard's for a sharded sale
	case SoldOut:
		g.events.MarkSoldOut(target, gen)
	case UnknownSale:
		if k > 1 {
			g.shards.Forget(sale) // the shard is gone (expired, recreated): learn the sale again
		}
	}
	return v, v.Outcome != UnknownSale
}

// run executes the script within the configured timeout. Neither client honours a context
// deadline here (the pipelined client runs commands on its own context; the pooled one only
// with go-redis's ContextTimeoutEnabled, which the shared client does not set), so the wait is
// bounded here instead. A timed-out script may still execute: the buyer then got 503 but has an order, which
// the order-status API and a retry (already_bought, same order id) reveal. Nobody told 202 is
// ever lost.
func (g *Gate) run(ctx context.Context, p Purchase) (Verdict, error) {
	timeout := time.Duration(g.Timeout)
	type result struct {
		v   Verdict
		err error
	}
	if !g.pending.TryAcquire() {
		shed.Inc()
		return Verdict{}, errShed
	}
	ch := make(chan result, 1)
	go func() {
		defer g.pending.Release()
		v, err := Decide(context.Background(), g.scripter, p)
		ch <- result{v, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res := <-ch:
		return res.v, res.err
	case <-timer.C:
		return Verdict{}, errTimeout
	case <-ctx.Done():
		return Verdict{}, ctx.Err()
	}
}

var (
	errTimeout = errors.New("decision timed out")
	errShed    = errors.New("too many decisions waiting on redis (max_pending): shed without a decision")
)

// Static bodies of the refusals that carry no order id.
var refusalBodies = func() map[Outcome][]byte {
	m := map[Outcome][]byte{}
	for _, o := range []Outcome{Unauthenticated, BadRequest, UnknownSale, NotStarted, Ended, InvalidToken, TokenExpired, TokenUsed, SoldOut, Unavailable} {
		m[o] = []byte(`{"code":"` + string(o) + `","message":"` + o.Message() + `"}`)
	}
	return m
}()

func writeVerdict(w http.ResponseWriter, v Verdict, retryAfter string) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Cache-Control"] = []string{"no-store"}
	var body []byte
	switch v.Outcome {
	case Accepted:
		body = []byte(`{"order_id":"` + v.OrderID + `","status":"queued"}`)
	case AlreadyBought:
		body, _ = json.Marshal(contract.Refusal{Code: contract.CodeAlreadyBought, Message: AlreadyBought.Message(), OrderID: v.OrderID})
	default:
		body = refusalBodies[v.Outcome]
		if body == nil {
			v.Outcome = Unavailable
			body = refusalBodies[Unavailable]
		}
	}
	if v.Outcome == Unavailable {
		h["Retry-After"] = []string{retryAfter}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(v.Outcome.Status())
	_, _ = w.Write(body)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Gate)(nil)
	_ caddy.Validator             = (*Gate)(nil)
	_ caddyhttp.MiddlewareHandler = (*Gate)(nil)
)
