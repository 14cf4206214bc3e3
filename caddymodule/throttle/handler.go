// Package throttle is the `seckill_throttle` HTTP handler: per-IP, per-device and per-user
// sliding windows that are exact across every gateway instance (one Redis round trip per
// request for all zones), with per-instance local tiers so that floods cost Redis almost
// nothing, ban escalation, shadow mode and a failure policy per zone.
//
// The deciding code (Limiter with its plan -> one Store round trip -> merge, Blocklist, Shield)
// is the package throttle/core, which imports nothing of HTTP or Caddy, so its tests link no
// Caddy; this package (handler.go, zone.go, key.go, headers.go) only turns requests into keys
// (MaskIP, SafeKey) and decisions into responses.
package throttle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/throttle/core"
	"github.com/seckilledge/seckill/contract"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler is the `seckill_throttle` handler. A request passes only when every zone that
// applies to it admits it. Zones are checked tightest first.
type Handler struct {
	// The zones. Each has its own key, window and limit; the same zone name in two handlers
	// (or two gateway instances) shares one counter per key.
	Zones []*Zone `json:"zones,omitempty"`

	// Requests that bypass throttling entirely.
	Allow *Allow `json:"allow,omitempty"`

	// Rate-limit headers sent with every throttled response: "ietf" (default) for the IETF
	// draft's `RateLimit-Policy` and `RateLimit`, "legacy" for `X-RateLimit-Limit`,
	// `X-RateLimit-Remaining` and `X-RateLimit-Reset`, "none" for neither.
	Headers string `json:"headers,omitempty"`

	// Random extra delay, uniform in [0, retry_jitter), added to Retry-After, so refused
	// clients do not all come back in the same second. Default 0.
	RetryJitter caddy.Duration `json:"retry_jitter,omitempty"`

	// Send each request's scripts as an ordinary pipeline on a pooled connection instead of
	// through go-redis's shared autopipeliner. By default the calls of concurrent requests
	// are coalesced into deep pipelines (far fewer syscalls at hundreds of connections);
	// go-redis marks that API experimental, so this switch turns it off.
	DisableAutopipeline bool `json:"disable_autopipeline,omitempty"`

	// timeout (default 100ms: past it the zones' on_failure policies apply), max_pending,
	// handle_errors (refusals, 429 and 503, go to the handle_errors routes).
	handler.Limits

	limiter *core.Limiter
	zones   []*Zone // in limiter order
	allow   *allowList
	logger  *zap.Logger
	refuse  handler.Writer
	// counters are the decision counters of zones, in limiter order.
	counters []zoneCounters
	// matchSet[i] is the first zone (in limiter order) with the same matchers as zone i, -1
	// for a zone without matchers.
	matchSet []int
	// policy holds the RateLimit-Policy value of each combination of zones (headers.go).
	policy []atomic.Pointer[string]
	// link is set when the seckill app linked this handler to the Decision after it in its
	// route (joint.go). (A pointer: the module value is copied by CaddyModule.)
	link *atomic.Pointer[decisionLink]
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Handler]("http.handlers.seckill_throttle")
}

var zoneName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Provision loads matchers, the shared Redis client and builds the limiter. No network I/O.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = edge.SampledLogger(ctx.Logger())
	registerMetrics(ctx.GetMetricsRegistry())
	if h.Headers == "" {
		h.Headers = "ietf"
	}
	for _, z := range h.Zones {
		if err := z.provision(ctx); err != nil {
			return err
		}
	}
	if h.Allow != nil {
		h.allow = new(allowList)
		for _, c := range h.Allow.CIDRs {
			p, err := parsePrefix(c)
			if err != nil {
				return fmt.Errorf("seckill_throttle: allow: %w", err)
			}
			h.allow.prefixes = append(h.allow.prefixes, p)
		}
		if h.Allow.MatcherSetsRaw != nil {
			mod, err := ctx.LoadModule(h.Allow, "MatcherSetsRaw")
			if err != nil {
				return fmt.Errorf("seckill_throttle: allow: loading matchers: %w", err)
			}
			if err := h.allow.matchers.FromInterface(mod); err != nil {
				return err
			}
		}
	}
	a, err := ctx.App("seckill")
	if err != nil {
		return fmt.Errorf("seckill_throttle: loading the seckill app: %w", err)
	}
	app := a.(*caddymodule.App)
	names := h.build(&core.RedisStore{R: app.RedisClient(), AutoPipeline: !h.DisableAutopipeline})
	app.AddStatus("throttle:"+strings.Join(names, ","), func(context.Context) any { return h.limiter.Status() })
	return nil
}

// build makes the limiter of the provisioned zones on store, and the refusal writer; it
// returns the zone names in decision order.
func (h *Handler) build(store core.Store) []string {
	rules := make([]core.Rule, len(h.Zones))
	for i, z := range h.Zones {
		rules[i] = z.rule()
	}
	caller := h.Caller(100 * time.Millisecond)
	h.limiter = core.NewLimiterOn(store, rules, caller.Timeout)
	h.limiter.Pending = caller.Pending
	h.refuse = h.Writer(time.Duration(h.RetryJitter))
	h.link = new(atomic.Pointer[decisionLink])
	byName := map[string]*Zone{}
	for _, z := range h.Zones {
		byName[z.Name] = z
	}
	h.zones = h.zones[:0]
	var names []string
	for _, r := range h.limiter.Rules() {
		h.zones = append(h.zones, byName[r.Name])
		names = append(names, r.Name)
	}
	h.matchSet = make([]int, len(h.zones))
	for i, z := range h.zones {
		h.matchSet[i] = -1
		if len(z.matchers) == 0 {
			continue
		}
		h.matchSet[i] = i
		for j := range i {
			if h.zones[j].matchJSON == z.matchJSON && len(h.zones[j].matchers) > 0 {
				h.matchSet[i] = h.matchSet[j]
				break
			}
		}
	}
	h.policy = nil
	if len(names) <= maxPolicyZones {
		h.policy = make([]atomic.Pointer[string], 1<<len(names))
	}
	h.counters = make([]zoneCounters, len(names))
	for i, n := range names {
		h.counters[i].zone = n
	}
	return names
}

// Validate checks the configuration; it reads nothing outside it.
func (h *Handler) Validate() error {
	if len(h.Zones) == 0 {
		return errors.New("seckill_throttle: at least one zone is required")
	}
	seen := map[string]bool{}
	for _, z := range h.Zones {
		switch {
		case !zoneName.MatchString(z.Name):
			return fmt.Errorf("seckill_throttle: zone name %q: want 1 to 32 characters of [A-Za-z0-9_-]", z.Name)
		case seen[z.Name]:
			return fmt.Errorf("seckill_throttle: zone %s is defined twice", z.Name)
		case z.Key == "":
			return fmt.Errorf("seckill_throttle: zone %s: key is required", z.Name)
		case z.Limit < 1:
			return fmt.Errorf("seckill_throttle: zone %s: limit must be >= 1", z.Name)
		case time.Duration(z.Window) < time.Millisecond:
			return fmt.Errorf("seckill_throttle: zone %s: window must be >= 1ms", z.Name)
		case z.IPv4Prefix < 0 || z.IPv4Prefix > 32:
			return fmt.Errorf("seckill_throttle: zone %s: ipv4_prefix must be in 1..32", z.Name)
		case z.IPv6Prefix < 0 || z.IPv6Prefix > 128:
			return fmt.Errorf("seckill_throttle: zone %s: ipv6_prefix must be in 1..128", z.Name)
		case z.LocalLimit < -1:
			return fmt.Errorf("seckill_throttle: zone %s: local_limit must be >= 1, or -1 to disable", z.Name)
		case z.OnFailure != "" && z.OnFailure != "fail_open" && z.OnFailure != "fail_closed":
			return fmt.Errorf("seckill_throttle: zone %s: on_failure must be fail_open or fail_closed", z.Name)
		case z.Ban != nil && z.Ban.After < 1:
			return fmt.Errorf("seckill_throttle: zone %s: ban after must be >= 1", z.Name)
		}
		seen[z.Name] = true
	}
	switch h.Headers {
	case "", "ietf", "legacy", "none":
	default:
		return fmt.Errorf("seckill_throttle: headers must be ietf, legacy or none, not %q", h.Headers)
	}
	if h.Timeout < 0 || h.RetryJitter < 0 {
		return errors.New("seckill_throttle: timeout and retry_jitter must not be negative")
	}
	return nil
}

// ServeHTTP decides and either refuses or hands the request on: to Caddy's next handler, or
// straight to the Decision the app linked it to, with the zones for its script call when
// joined (joint.go).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	var l *decisionLink
	if h.link != nil {
		l = h.link.Load()
	}
	if l != nil && l.floor != nil {
		switch t := l.floor.Target(r); {
		case t == handler.Elsewhere:
			// No handler of the route answers it: it passes through untouched.
			return next.ServeHTTP(w, r)
		case t == handler.ToOther || !l.direct:
			l = nil // the zones alone, then Caddy's chain
		}
	}
	if h.allowed(r) {
		allowlisted.incAllowlisted()
		if l != nil {
			return l.d.ServeDecision(w, r, nil)
		}
		return next.ServeHTTP(w, r)
	}
	var keys requestKeys
	h.keys(r, &keys)
	if l != nil && l.joined {
		// The decision runs the zones in its own script call (joint.go).
		x := &joint{h: h, w: w}
		if h.limiter.DeferTo(&x.j, keys.list) {
			return h.answer(w, r, l, next, x.j.Decision())
		}
		return l.d.ServeDecision(w, r, x)
	}
	d := h.limiter.Decide(r.Context(), keys.list)
	return h.answer(w, r, l, next, &d)
}

// answer records a decision, writes its headers, and refuses or hands the request on (to the
// linked decision l when set, else to next).
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, l *decisionLink, next caddyhttp.Handler, d *core.Decision) error {
	h.record(d)
	h.writeHeaders(w, d)
	if d.Status != 0 {
		return h.refuseWith(w, d)
	}
	if l != nil {
		return l.d.ServeDecision(w, r, nil)
	}
	return next.ServeHTTP(w, r)
}

func (h *Handler) refuseWith(w http.ResponseWriter, d *core.Decision) error {
	ref := refusalOf(d)
	ref.RetryAfter = d.RetryAfter
	return h.refuse.Write(w, ref)
}

// The throttle's refusals.
var (
	rateLimited = handler.Refusal{Status: http.StatusTooManyRequests, Code: contract.CodeRateLimited,
		Message: "too many requests, slow down"}
	banned = handler.Refusal{Status: http.StatusTooManyRequests, Code: contract.CodeRateLimited,
		Message: "too many requests: temporarily blocked"}
	unavailable = handler.Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "the rate limiter is unavailable, try again shortly"}
)

func refusalOf(d *core.Decision) handler.Refusal {
	switch {
	case d.Status == http.StatusServiceUnavailable:
		return unavailable
	case d.Banned:
		return banned
	default:
		return rateLimited
	}
}

// requestKeys holds a request's key in each zone, inline up to maxPolicyZones zones.
type requestKeys struct {
	buf  [maxPolicyZones]string
	list []string
}

// keys are the request's key in each zone (limiter order), "" where the zone does not apply.
func (h *Handler) keys(r *http.Request, out *requestKeys) {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	// Zones with the same matchers (the demo's three /seckill/* zones) share one evaluation:
	// matched[m] is 0 not yet, 1 true, 2 false for the zones whose matchSet is m.
	var matched [maxPolicyZones]uint8
	keys := out.buf[:0]
	if len(h.zones) > len(out.buf) {
		keys = make([]string, 0, len(h.zones))
	}
	for i, z := range h.zones {
		ok := true
		if m := h.matchSet[i]; m >= 0 && m < len(matched) {
			if matched[m] == 0 {
				matched[m] = 2
				if z.matches(r) {
					matched[m] = 1
				}
			}
			ok = matched[m] == 1
		} else if m >= 0 {
			ok = z.matches(r)
		}
		k := ""
		if ok {
			k = z.key(r, repl)
		}
		keys = append(keys, k)
	}
	out.list = keys
}

func (h *Handler) record(d *core.Decision) {
	if d.RedisCalled {
		result := redisOK
		if errors.Is(d.RedisErr, core.ErrShed) {
			result = redisShed
		} else if d.RedisErr != nil {
			result = redisError
		}
		result.Observe(d.RedisTime.Seconds())
	}
	if d.RedisErr != nil {
		h.logger.Warn("redis did not answer; zones applied their failure policy", zap.Error(d.RedisErr))
	}
	for i := range d.Results {
		if o := d.Results[i].Outcome; o != core.Skipped {
			h.counters[i].inc(o)
		}
	}
}

// Cleanup releases nothing shared: the Redis client belongs to the seckill app.
func (h *Handler) Cleanup() error { return nil }

// Limiter exposes the handler's deciding core (tests use it).
func (h *Handler) Limiter() *core.Limiter { return h.limiter }

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
