// Package gate is the `seckill_gate` HTTP handler: the purchase decision at the edge, in one
// atomic Redis script (sale window, one-time token, one unit per user, stock, outbox entry).
// The relay that hands every accepted order from the outbox to RabbitMQ with publisher confirms
// belongs to the seckill app (package caddymodule/relay); a gate only tells it where an entry is.
//
// A winner is answered 202 only after the script wrote its outbox entry, so an instance
// killed right after answering loses nobody: another instance's relay claims the entry.
//
// The decision itself (Decider, Verdict, the Store port and its script reply, the buy body) is
// the package gate/core, which imports no Caddy; this package turns requests into purchases
// and verdicts into answers, metrics and spans.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/google/uuid"
	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpophttp"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/handler"
	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/internal/placeholder"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(Gate{})
}

// Gate is the `seckill_gate` handler. It answers every request itself (it never calls the next
// handler): 202 with the order id, or a JSON refusal with the contract's code.
type Gate struct {
	// sale, user.
	handler.Subject

	// share is the gate's place in a dispatched route (handler.Dispatch), if it stands in one.
	share *handler.Share

	// Require a one-time purchase token (issued by seckill_token). Its signature and expiry
	// are checked here with the app's token_keys; its single use inside the decision script.
	RequireToken bool `json:"require_token,omitempty"`

	// RequireAdmission: a sale with a waiting room (seckill_room, docs/room.md) sells only to
	// a user who holds a live admission at the moment of the purchase, checked inside the
	// decision script. Without it such a sale is refused (503 unavailable, outcome
	// misconfigured, logged): a gateway that cannot check the room never sells around it.
	// Sales without a room are unaffected.
	RequireAdmission bool `json:"require_admission,omitempty"`

	// Where the token is read from. Default: {http.request.header.X-Seckill-Token}.
	Token string `json:"token,omitempty"`

	// Retry-After sent with 503. Default 1s (rounded up to whole seconds).
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`

	// timeout (default 1s), max_pending, handle_errors.
	handler.Limits

	// device_binding (off, optional, required) and proof_max_age (caddymodule/dpop): a token
	// bound to a device's key (seckill_token with device_binding) is spent only with a fresh
	// DPoP proof of that key, for this method and URL, over the token's hash, whose jti is
	// spent in the purchase's script call; required refuses bearer tokens and requests
	// without a proof. Needs require_token.
	dpophttp.Settings

	// How decisions reach Redis: "pipelined" (default) batches the scripts of concurrent
	// requests into one round trip (go-redis automatic pipelining); "pooled" sends each on its
	// own pooled connection. See BENCHMARKS.md for what each costs.
	Redis string `json:"redis,omitempty"`

	// Removed: the relay is configured in the seckill app (`seckill { relay { ... } }`, JSON
	// apps.seckill.relay). A config that still sets it here fails to provision with an error
	// that says so, rather than run with settings it no longer applies (docs/gate.md).
	Relay json.RawMessage `json:"relay,omitempty"`

	app       *caddymodule.App
	decider   *core.Decider
	eventsApp *caddyevents.App
	ctx       caddy.Context
	logger    *zap.Logger
	refuse    handler.Writer
	// sale, user and token are Sale, User and Token resolved at provision (a header, a path
	// segment or a variable read directly, not through the replacer).
	sale, user, token placeholder.Value
}

// CaddyModule returns the Caddy module information.
func (Gate) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Gate]("http.handlers.seckill_gate")
}

// Redis modes.
const (
	RedisPipelined = "pipelined"
	RedisPooled    = "pooled"
)

// Provision sets defaults and takes the app's shared clients. No network I/O.
func (g *Gate) Provision(ctx caddy.Context) error {
	g.share = new(handler.Share)
	if g.Relay != nil {
		return errRelayMoved
	}
	g.ctx = ctx
	g.logger = edge.SampledLogger(ctx.Logger())
	if _, err := g.Subject.Inherit(ctx); err != nil {
		return fmt.Errorf("seckill_gate: %w", err)
	}
	g.Subject.SetDefaults()
	if g.Token == "" {
		g.Token = "{http.request.header.X-Seckill-Token}"
	}
	if g.RetryAfter <= 0 {
		g.RetryAfter = caddy.Duration(time.Second)
	}
	if g.Redis == "" {
		g.Redis = RedisPipelined
	}
	g.refuse = g.Writer(0)
	g.sale, g.user, g.token = placeholder.Compile(g.Sale), placeholder.Compile(g.User), placeholder.Compile(g.Token)

	appIface, err := ctx.App("seckill")
	if err != nil {
		return fmt.Errorf("seckill_gate: the seckill app: %w", err)
	}
	g.app = appIface.(*caddymodule.App)
	d := &core.Decider{
		Caller:     g.Caller(time.Second),
		Shards:     new(caddymodule.ShardCounts),
		SoldOut:    g.app.SaleEvents(),
		Windows:    g.app.SaleEvents(),
		Now:        time.Now,
		NewOrderID: uuidV7,
		Observe:    func(d time.Duration) { scriptSeconds.Observe(d.Seconds()) },

		RequireAdmission: g.RequireAdmission,

		Binding:     g.DeviceBinding,
		ProofWindow: dpop.ReplayWindow(time.Duration(g.ProofMaxAge)),
	}
	if g.RequireToken {
		d.Keyring = g.app.Keyring()
		if d.Keyring == nil {
			return errors.New("seckill_gate: require_token needs token_keys in the seckill global option")
		}
	}
	client := g.app.RedisClient()
	store := core.RedisStore{R: client}
	if g.Redis == RedisPipelined {
		// One deferred pipeliner per client, shared and closed with it. Lazy: no I/O here.
		// Its commands are awaited on the request's goroutine, with the deadline applied to the
		// wait (edge.Caller.Inline): no goroutine per decision.
		ap, err := client.AsyncAutoPipeline()
		if err != nil {
			g.logger.Warn("automatic pipelining unavailable; using pooled calls", zap.Error(err))
		} else {
			store = core.RedisStore{R: ap, Sub: ap}
			d.Caller.Inline = true
		}
	}
	d.Store = store
	g.decider = d
	if ev, err := ctx.App("events"); err == nil {
		g.eventsApp, _ = ev.(*caddyevents.App)
	}
	g.app.UseRelay() // this config accepts orders: the app runs its relay
	metric.Register(ctx.GetMetricsRegistry(), collectors()...)
	return nil
}

// errRelayMoved refuses the handler's former relay settings (Caddyfile and JSON alike).
var errRelayMoved = errors.New("seckill_gate: the relay block moved to the seckill app: " +
	"write it in the seckill global option, `seckill { relay { ... } }` (JSON apps.seckill.relay), " +
	"and remove it from seckill_gate")

func uuidV7() (string, error) {
	id, err := uuid.NewV7()
	return id.String(), err
}

// Validate checks the configuration.
func (g *Gate) Validate() error {
	if g.Redis != RedisPipelined && g.Redis != RedisPooled {
		return fmt.Errorf("seckill_gate: redis must be %q or %q, not %q", RedisPipelined, RedisPooled, g.Redis)
	}
	if err := g.Settings.Validate(); err != nil {
		return fmt.Errorf("seckill_gate: %w", err)
	}
	if g.Enabled() && !g.RequireToken {
		return errors.New("seckill_gate: device_binding needs require_token (a proof is over the token's hash)")
	}
	return nil
}

// ServeHTTP decides the purchase and writes the answer. Standing in a dispatched route
// (handler.Dispatch), it passes every request but a purchase to next.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if g.share.Passes(r) {
		return next.ServeHTTP(w, r)
	}
	return g.ServeDecision(w, r, nil)
}

// Paths is what the gate answers in a dispatched route: POST {prefix}/{sale}/buy.
func (g *Gate) Paths() (string, []handler.SharedPath) {
	return g.Prefix, []handler.SharedPath{{Rest: "buy", Method: http.MethodPost}}
}

// Share places the gate in its route's dispatch (caddymodule.App, at start).
func (g *Gate) Share(d *handler.Dispatch, i int) { g.share.Set(d, i) }

// ServeDecision decides the purchase with joint, the zones of the throttle right before the
// gate in its route (nil for none; handler.Joint), in its script call, and writes the answer.
// The zones are settled on every path, before anything of the gate's is counted.
func (g *Gate) ServeDecision(w http.ResponseWriter, r *http.Request, joint handler.Joint) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	if ref, ok := handler.CheckRequest(r); !ok {
		if joint != nil && joint.Alone(r.Context()) {
			return joint.Refuse()
		}
		// The sale placeholder reads the raw path, the routes matched the cleaned one: a
		// per-sale rule must not be bypassed with /seckill/a/../b/buy.
		countDecision("", core.BadRequest)
		repl.Set("http.seckill.outcome", string(core.BadRequest))
		return g.refuse.Write(w, ref)
	}
	sale := value(g.Sale, g.sale).Get(r, repl)
	user := value(g.User, g.user).Get(r, repl)
	var token string
	if g.RequireToken {
		token = value(g.Token, g.token).Get(r, repl)
	}
	var (
		v        core.Verdict
		known    bool
		err      error
		proofRef error // the proof's error when the outcome is ProofRefused
	)
	if item, berr := core.ReadItem(r); berr != nil {
		// Who asks comes first (401 before 400), then what is asked.
		v.Outcome, v.Reason = core.CheckRequest(sale, user), core.ReasonBody
		if v.Outcome == "" {
			v.Outcome = core.BadRequest
		}
	} else {
		lendTracerProvider(r.Context())
		req := core.Request{Sale: sale, User: user, Token: token, Item: item}
		if joint != nil {
			req.Zones = joint
		}
		if g.Enabled() && (g.DeviceBinding == dpop.Required || dpophttp.HasProof(r)) {
			req.Proof, err = g.Check(r, token, time.Now())
		}
		if err != nil {
			// Refused before anything is decided: the zones settle alone below.
			v.Outcome, proofRef, err = ProofRefused, err, nil
		} else {
			v, known, err = g.decider.Decide(r.Context(), req)
		}
	}
	if joint != nil && settle(r.Context(), joint, v) {
		// The zones refused: in the script call, alone when the gate refused before Redis, or
		// by their local tiers when it answered from its memory.
		return joint.Refuse()
	}
	if err != nil {
		if errors.Is(err, edge.ErrShed) {
			shed.Inc()
		}
		if r.Context().Err() == nil {
			g.logger.Warn("decision failed; answering unavailable", zap.String("sale", sale), zap.Error(err))
		}
	}
	switch v.Outcome {
	case core.Accepted:
		g.app.NotifyRelay(v.Target) // the outbox the entry is in: the shard's for a sharded sale
	case core.Misconfigured:
		// The operator must hear of it: the sale is closed on this gateway until its config
		// checks admissions. (Sampled logger: a rush of buyers writes a few lines a second.)
		g.logger.Error("a sale with a waiting room reached seckill_gate without require_admission; refusing its purchases (503 unavailable)",
			zap.String("sale", sale))
	case core.RoomMissing:
		g.logger.Error("a sale with a waiting room has no room state in Redis (preheat it again); refusing its purchases (503 unavailable)",
			zap.String("sale", sale))
	case core.DrawMissing:
		g.logger.Error("a draw sale reached the gate script without the draw's entries key (a gateway out of date with lua/gate.lua); refusing its purchases (503 unavailable)",
			zap.String("sale", sale))
	}

	label := ""
	if known {
		label = sale
	}
	countDecision(label, v.Outcome)
	traceDecision(r.Context(), sale, v)
	repl.Set("http.seckill.outcome", string(v.Outcome))
	repl.Set("http.seckill.order_id", v.OrderID)
	if g.eventsApp != nil && g.eventsApp.ShouldEmit(EventName) {
		ctx := g.ctx
		ctx.Context = r.Context()
		g.eventsApp.Emit(ctx, EventName, map[string]any{"sale": sale, "user": user, "outcome": string(v.Outcome), "order_id": v.OrderID})
	}
	if v.Outcome == core.Accepted {
		core.WriteAccepted(w, v)
		return nil
	}
	ref := v.Refusal()
	if v.Outcome == ProofRefused {
		ref, _ = dpop.Refusal(proofRef)
	}
	ref.RetryAfter = time.Duration(g.RetryAfter)
	return g.refuse.Write(w, ref)
}

// settle settles the zones the script call did not carry: a verdict from this gateway's memory
// (a sold-out sale) asks no zone's exact tier, so the flood after a sell-out costs Redis
// nothing (docs/throttle.md, "Answered from memory"); any other refusal before Redis still
// counts in the zones, so junk floods are limited and banned as before.
func settle(ctx context.Context, joint handler.Joint, v core.Verdict) (refused bool) {
	if v.Memory {
		return joint.Skip()
	}
	return joint.Alone(ctx)
}

// ProofRefused is the outcome (metric label, {http.seckill.outcome}) of a purchase whose DPoP
// proof was refused before anything was decided: missing under device_binding required,
// malformed, for another method or URL, too old (the answer's code says which).
const ProofRefused core.Outcome = hcore.OutcomeProofRefused

// value is tpl as provisioned (v), or compiled now for a gate set up without Provision.
func value(tpl string, v placeholder.Value) placeholder.Value {
	if v.Template() == tpl {
		return v
	}
	return placeholder.Compile(tpl)
}

// EventName is the Caddy event emitted for every decision; its data has sale, user, outcome
// and order_id.
const EventName = "seckill_decision"

// Interface guards
var (
	_ caddy.Provisioner           = (*Gate)(nil)
	_ caddy.Validator             = (*Gate)(nil)
	_ caddyhttp.MiddlewareHandler = (*Gate)(nil)
	_ handler.Decision            = (*Gate)(nil)
)
