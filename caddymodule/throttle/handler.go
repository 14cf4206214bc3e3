// Package throttle is the `seckill_throttle` HTTP handler: per-IP, per-device and per-user
// sliding windows that are exact across every gateway instance (one Redis round trip per
// request for all zones), with per-instance local tiers so that floods cost Redis almost
// nothing, ban escalation, shadow mode and a failure policy per zone.
//
// The deciding code (Limiter, Blocklist, Shield, MaskIP, SafeKey) knows nothing of HTTP or
// Caddy; the handler only turns requests into keys and decisions into responses.
package throttle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/edge"
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

	// Hand refusals (429, 503) to the server's `handle_errors` routes as caddyhttp errors
	// instead of writing the JSON refusal body. The Retry-After and rate-limit headers are set
	// either way; `{err.status_code}` and `{err.message}` carry the rest. Default false:
	// without handle_errors routes Caddy would answer with an empty body.
	HandleErrors bool `json:"handle_errors,omitempty"`

	// The longest a decision waits for Redis before the zones' failure policies apply.
	// Default 100ms.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// Send each request's scripts as an ordinary pipeline on a pooled connection instead of
	// through go-redis's shared autopipeliner. By default the calls of concurrent requests
	// are coalesced into deep pipelines (far fewer syscalls at hundreds of connections);
	// go-redis marks that API experimental, so this switch turns it off.
	DisableAutopipeline bool `json:"disable_autopipeline,omitempty"`

	// The most decisions this handler may have waiting on Redis at once (counting those whose
	// request already stopped waiting at the timeout, until Redis answers them). Beyond it a
	// decision is not sent: the zones' failure policies apply at once (fail_open admits,
	// fail_closed answers 503), so an overloaded or stalled Redis cannot make the gateway
	// pile up goroutines and queued scripts. Default 4096; -1 disables the bound.
	MaxPending int `json:"max_pending,omitempty"`

	limiter *Limiter
	zones   []*Zone // in limiter order
	allow   *allowList
	logger  *zap.Logger
}

// Zone is one rate limit.
type Zone struct {
	// Name of the zone: 1 to 32 characters of [A-Za-z0-9_-]. It is part of the Redis key
	// (seckill:rl:{<zone>:<key>}) and the metrics' zone label.
	Name string `json:"name,omitempty"`

	// The client key, from placeholders: {http.vars.client_ip} (Caddyfile: {client_ip}; it
	// honours the server's trusted_proxies), a device header such as
	// {http.request.header.X-Device-ID}, the user id {http.auth.user.id} or
	// {http.request.header.X-User-ID}, or any combination. A request whose key is empty is
	// not counted in this zone (so pair a device or user zone with an IP zone).
	Key string `json:"key,omitempty"`

	// Only requests matching one of these matcher sets are counted in this zone. Default:
	// every request that reaches the handler.
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`

	// Length of the sliding window. Required.
	Window caddy.Duration `json:"window,omitempty"`

	// Requests admitted per key in any interval of length `window`, across every instance.
	// Required, >= 1.
	Limit int `json:"limit,omitempty"`

	// Prefix length IPv4 client addresses are bucketed to in the key. Default 32 (one
	// address).
	IPv4Prefix int `json:"ipv4_prefix,omitempty"`

	// Prefix length IPv6 client addresses are bucketed to in the key. Default 64 (one
	// subnet: a single host usually owns a whole /64).
	IPv6Prefix int `json:"ipv6_prefix,omitempty"`

	// Per-instance flood shield: at most this many requests per key per window are in flight
	// to or admitted by Redis from one instance. Default: limit (it then never refuses what
	// the exact tier would admit). -1 disables the shield.
	LocalLimit int `json:"local_limit,omitempty"`

	// Escalation of repeated violations to a ban.
	Ban *Ban `json:"ban,omitempty"`

	// Count and report (metrics, log), never refuse.
	Shadow bool `json:"shadow,omitempty"`

	// What to do when Redis cannot answer within the handler's timeout: "fail_open"
	// (default: admit, counted as outcome failed_open; the flood shield still holds each key
	// to local_limit per window on each instance) or "fail_closed" (503 `unavailable` with
	// Retry-After).
	OnFailure string `json:"on_failure,omitempty"`

	template   string
	usesClient bool
	usesPeer   bool
	matchers   caddyhttp.MatcherSets
}

// Ban escalates a key that keeps exceeding its zone to a ban, stored in Redis (so every
// instance enforces it) and answered locally while it lasts.
type Ban struct {
	// Over-limit episodes that trigger the ban. One episode is a run of refusals until a slot
	// frees, however many requests it refused. Required, >= 1.
	After int `json:"after,omitempty"`

	// Strikes are forgotten this long after the first one. Default 10m.
	Within caddy.Duration `json:"within,omitempty"`

	// How long the ban lasts. Default 15m.
	For caddy.Duration `json:"for,omitempty"`
}

// Allow lists requests that are never throttled: internal health checks, known partners.
type Allow struct {
	// Client IP ranges (CIDR or single addresses), checked against the client IP as Caddy
	// resolved it (trusted_proxies honoured).
	CIDRs []string `json:"cidrs,omitempty"`

	// Matcher sets; a request matching any of them bypasses throttling.
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`
}

type allowList struct {
	prefixes []netip.Prefix
	matchers caddyhttp.MatcherSets
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.seckill_throttle",
		New: func() caddy.Module { return new(Handler) },
	}
}

var zoneName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Provision loads matchers, the shared Redis client and builds the limiter. No network I/O.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = edge.SampledLogger(ctx.Logger())
	registerMetrics(ctx.GetMetricsRegistry())
	if h.Timeout == 0 {
		h.Timeout = caddy.Duration(100 * time.Millisecond)
	}
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
	rules := make([]Rule, len(h.Zones))
	for i, z := range h.Zones {
		rules[i] = z.rule()
	}
	h.limiter = NewLimiter(app.RedisClient(), rules, time.Duration(h.Timeout))
	h.limiter.AutoPipeline = !h.DisableAutopipeline
	if h.MaxPending == 0 {
		h.MaxPending = edge.DefaultMaxPending
	}
	h.limiter.Pending = edge.NewPending(h.MaxPending)
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
	app.AddStatus("throttle:"+strings.Join(names, ","), func(context.Context) any { return h.limiter.Status() })
	return nil
}

func (z *Zone) provision(ctx caddy.Context) error {
	if z.IPv4Prefix == 0 {
		z.IPv4Prefix = 32
	}
	if z.IPv6Prefix == 0 {
		z.IPv6Prefix = 64
	}
	if z.OnFailure == "" {
		z.OnFailure = "fail_open"
	}
	if z.Ban != nil {
		if z.Ban.Within == 0 {
			z.Ban.Within = caddy.Duration(10 * time.Minute)
		}
		if z.Ban.For == 0 {
			z.Ban.For = caddy.Duration(15 * time.Minute)
		}
	}
	z.template, z.usesClient, z.usesPeer = rewriteTemplate(z.Key)
	if z.MatcherSetsRaw != nil {
		mod, err := ctx.LoadModule(z, "MatcherSetsRaw")
		if err != nil {
			return fmt.Errorf("seckill_throttle: zone %s: loading matchers: %w", z.Name, err)
		}
		if err := z.matchers.FromInterface(mod); err != nil {
			return err
		}
	}
	return nil
}

func (z *Zone) rule() Rule {
	r := Rule{Name: z.Name, Limit: z.Limit, Window: time.Duration(z.Window), LocalLimit: z.LocalLimit,
		Shadow: z.Shadow, FailClosed: z.OnFailure == "fail_closed"}
	if z.Ban != nil {
		r.Ban = BanRule{Strikes: z.Ban.After, Within: time.Duration(z.Ban.Within), Duration: time.Duration(z.Ban.For)}
	}
	return r
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

// ServeHTTP decides and either refuses or hands the request on.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.allowed(r) {
		decisions.WithLabelValues("", "allowlisted").Inc()
		return next.ServeHTTP(w, r)
	}
	d := h.decide(r)
	h.record(&d)
	h.writeHeaders(w, &d)
	switch d.Status {
	case 0:
		return next.ServeHTTP(w, r)
	case 503:
		return h.refuse(w, http.StatusServiceUnavailable, d.RetryAfter, contract.CodeUnavailable,
			"the rate limiter is unavailable, try again shortly")
	default:
		msg := "too many requests, slow down"
		if d.Banned {
			msg = "too many requests: temporarily blocked"
		}
		return h.refuse(w, http.StatusTooManyRequests, d.RetryAfter, contract.CodeRateLimited, msg)
	}
}

func (h *Handler) decide(r *http.Request) Decision {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	keys := make([]string, len(h.zones))
	for i, z := range h.zones {
		keys[i] = z.key(r, repl)
	}
	return h.limiter.Decide(r.Context(), keys)
}

// key is the request's key in zone z, "" when the zone does not apply.
func (z *Zone) key(r *http.Request, repl *caddy.Replacer) string {
	if len(z.matchers) > 0 {
		ok, err := z.matchers.AnyMatchWithError(r)
		if err != nil || !ok {
			return ""
		}
	}
	if z.usesClient {
		ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
		if ip == "" {
			ip = peerHost(r)
		}
		repl.Set(clientNetPlaceholder[1:len(clientNetPlaceholder)-1], MaskIP(ip, z.IPv4Prefix, z.IPv6Prefix))
	}
	if z.usesPeer {
		repl.Set(peerNetPlaceholder[1:len(peerNetPlaceholder)-1], MaskIP(peerHost(r), z.IPv4Prefix, z.IPv6Prefix))
	}
	k := repl.ReplaceAll(z.template, "")
	if k == "" {
		return ""
	}
	return SafeKey(k)
}

func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (h *Handler) allowed(r *http.Request) bool {
	if h.allow == nil {
		return false
	}
	if len(h.allow.prefixes) > 0 {
		ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
		if ip == "" {
			ip = peerHost(r)
		}
		if addr, err := netip.ParseAddr(ip); err == nil {
			addr = addr.Unmap().WithZone("")
			for _, p := range h.allow.prefixes {
				if p.Contains(addr) {
					return true
				}
			}
		}
	}
	if len(h.allow.matchers) > 0 {
		ok, err := h.allow.matchers.AnyMatchWithError(r)
		return err == nil && ok
	}
	return false
}

func (h *Handler) record(d *Decision) {
	if d.RedisCalled {
		result := "ok"
		if errors.Is(d.RedisErr, ErrShed) {
			result = "shed"
		} else if d.RedisErr != nil {
			result = "error"
		}
		redisSeconds.WithLabelValues(result).Observe(d.RedisTime.Seconds())
	}
	if d.RedisErr != nil {
		h.logger.Warn("redis did not answer; zones applied their failure policy", zap.Error(d.RedisErr))
	}
	for _, res := range d.Results {
		if res.Outcome != Skipped {
			decisions.WithLabelValues(res.Rule.Name, string(res.Outcome)).Inc()
		}
	}
}

// writeHeaders sets the rate-limit headers from the binding zone: the refusing zone, else
// the zone with the fewest admissions left.
func (h *Handler) writeHeaders(w http.ResponseWriter, d *Decision) {
	if h.Headers == "none" {
		return
	}
	var bind *ZoneResult
	var policies []string
	for i := range d.Results {
		res := &d.Results[i]
		if res.Outcome == Skipped || res.Outcome == FailedOpen || res.Outcome == FailedClosed || res.Rule.Shadow {
			continue
		}
		policies = append(policies, policyOf(res.Rule))
		switch {
		case res.Outcome != Allowed:
			if bind == nil || bind.Outcome == Allowed {
				bind = res // the (first, tightest) refusing zone
			}
		case bind == nil || (bind.Outcome == Allowed && res.Remaining < bind.Remaining):
			bind = res
		}
	}
	if bind == nil {
		return
	}
	remaining, reset := bind.Remaining, ceilSeconds(bind.Reset)
	if bind.Outcome != Allowed {
		remaining, reset = 0, ceilSeconds(bind.RetryAfter)
	}
	hdr := w.Header()
	if h.Headers == "legacy" {
		hdr.Set("X-RateLimit-Limit", strconv.Itoa(bind.Rule.Limit))
		hdr.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		hdr.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
		return
	}
	hdr.Set("RateLimit-Policy", strings.Join(policies, ", "))
	hdr.Set("RateLimit", `"`+bind.Rule.Name+`";r=`+strconv.Itoa(remaining)+";t="+strconv.FormatInt(reset, 10))
}

// policyOf is the zone's RateLimit-Policy item (formatted once, by NewLimiter).
func policyOf(r *Rule) string {
	if r.policy == "" {
		return fmt.Sprintf("%q;q=%d;w=%d", r.Name, r.Limit, ceilSeconds(r.Window))
	}
	return r.policy
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// refuse answers a refusal: the JSON body by default, or a caddyhttp error for handle_errors.
func (h *Handler) refuse(w http.ResponseWriter, status int, retry time.Duration, code, msg string) error {
	if j := time.Duration(h.RetryJitter); j > 0 {
		retry += rand.N(j)
	}
	w.Header().Set("Retry-After", strconv.FormatInt(max(ceilSeconds(retry), 1), 10))
	if h.HandleErrors {
		return caddyhttp.Error(status, refusalError{code: code, msg: msg})
	}
	body := refusalBody(code, msg)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// The few refusal bodies, marshalled once: a flood is answered with them thousands of times
// a second.
var refusalBodies sync.Map // code + "\x00" + msg -> []byte

func refusalBody(code, msg string) []byte {
	k := code + "\x00" + msg
	if b, ok := refusalBodies.Load(k); ok {
		return b.([]byte)
	}
	b, _ := json.Marshal(contract.Refusal{Code: code, Message: msg})
	refusalBodies.Store(k, b)
	return b
}

type refusalError struct{ code, msg string }

func (e refusalError) Error() string { return e.code + ": " + e.msg }

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Cleanup releases nothing shared: the Redis client belongs to the seckill app.
func (h *Handler) Cleanup() error { return nil }

// Limiter exposes the handler's deciding core (tests use it).
func (h *Handler) Limiter() *Limiter { return h.limiter }

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
