// Package core is the throttle's decision without transport: the Limiter of the zones' Rules,
// its per-instance local tiers (Blocklist, flood Shield), one round trip to a Store (RedisStore:
// lua/throttle.lua) for the zones the local tiers left, and the merge of the answers into a
// Decision. It knows nothing of HTTP or Caddy (caddymodule/throttle is the handler that feeds
// it keys and answers its decisions), so its tests link neither.
package core

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
)

// Rule is one zone's limit as the deciding code sees it: no HTTP, no Caddy.
type Rule struct {
	Name       string
	Limit      int
	Window     time.Duration
	LocalLimit int  // flood shield limit per instance; 0 = Limit, < 0 = no shield
	Shadow     bool // count and report, never refuse
	FailClosed bool // refuse with 503 when Redis cannot answer
	Ban        BanRule

	policy string // the RateLimit-Policy item
}

// Policy is the zone's RateLimit-Policy item (formatted once, by NewLimiterOn).
func (r *Rule) Policy() string {
	if r.policy == "" {
		return fmt.Sprintf("%q;q=%d;w=%d", r.Name, r.Limit, (r.Window+time.Second-1)/time.Second)
	}
	return r.policy
}

// BanRule escalates repeated violations to a ban. Strikes == 0 disables it.
type BanRule struct {
	Strikes  int           // over-limit episodes that trigger a ban
	Within   time.Duration // strikes are forgotten this long after the first one
	Duration time.Duration // how long a ban lasts
}

// Outcome is what one zone decided for one request. The values are the metrics' outcome
// label.
type Outcome string

const (
	Allowed       Outcome = "allowed"        // the exact tier admitted it
	Limited       Outcome = "limited"        // the exact tier refused it: over the limit
	Banned        Outcome = "banned"         // refused: the key is banned
	ShadowLimited Outcome = "shadow_limited" // a shadow zone would have refused it
	LocalHit      Outcome = "local_hit"      // refused by this instance's blocklist or shield, no Redis call
	FailedOpen    Outcome = "failed_open"    // Redis did not answer; admitted by policy
	FailedClosed  Outcome = "failed_closed"  // Redis did not answer; refused with 503 by policy
	Skipped       Outcome = ""               // the zone does not apply (no key, matcher false, other zone refused first)
)

// ZoneResult is one zone's part of a decision.
type ZoneResult struct {
	Rule       *Rule
	Outcome    Outcome
	Remaining  int           // admissions left in the window (meaningful after a Redis answer)
	Reset      time.Duration // until a slot frees
	RetryAfter time.Duration // for refusals
	Banned     bool          // LocalHit or ShadowLimited caused by a ban
	AdmittedAt time.Time     // Redis time of an admission by the exact tier
}

// Decision is the verdict on one request across every zone.
type Decision struct {
	// Status is 0 when the request may pass, 429 when a zone refused it, 503 when a
	// fail_closed zone could not reach Redis.
	Status     int
	RetryAfter time.Duration
	Banned     bool
	// Results holds one entry per zone, in the limiter's (tightest first) order.
	Results []ZoneResult
	// RedisCalled reports whether the decision needed a Redis round trip; RedisTime is how
	// long it took.
	RedisCalled bool
	RedisTime   time.Duration
	RedisErr    error
}

// Allowed reports whether the request may pass.
func (d Decision) Allowed() bool { return d.Status == 0 }

// Limiter decides for a request across its zones: local tiers first (blocklist, then flood
// shield), then ONE round trip to the Store carrying one script call per remaining zone, then
// the merge of the answers. It knows nothing of HTTP or Caddy.
type Limiter struct {
	// Store is the exact tier (RedisStore in production).
	Store Store

	zones   []*zoneState
	timeout time.Duration

	// Now is the local clock of the blocklist and the shield; tests replace it.
	Now func() time.Time

	// Pending bounds the decisions waiting on the Store (nil: unbounded). A decision that
	// finds it full does not go to Redis: it fails with ErrShed and the zones' failure
	// policies apply, as when Redis does not answer. Set it before the first Decide.
	Pending *edge.Pending
}

type zoneState struct {
	rule      Rule
	blocklist *Blocklist
	shield    *Shield
	args      []any
}

// MaxBlocklistEntries bounds each zone's blocklist.
const MaxBlocklistEntries = 100_000

// NewLimiter builds a limiter over rules on a Redis client (see NewLimiterOn).
func NewLimiter(rdb redis.UniversalClient, rules []Rule, timeout time.Duration) *Limiter {
	return NewLimiterOn(&RedisStore{R: rdb}, rules, timeout)
}

// NewLimiterOn builds a limiter over rules on store. The rules are sorted tightest first
// (lowest rate, then shortest window), so a local refusal by the tightest zone is found before
// the others are touched; Rules() gives the resulting order, which Decide's keys must follow.
func NewLimiterOn(store Store, rules []Rule, timeout time.Duration) *Limiter {
	l := &Limiter{Store: store, timeout: timeout, Now: time.Now}
	sorted := append([]Rule(nil), rules...)
	SortTightestFirst(sorted)
	for _, r := range sorted {
		r.policy = fmt.Sprintf("%q;q=%d;w=%d", r.Name, r.Limit, (r.Window+time.Second-1)/time.Second)
		z := &zoneState{rule: r, blocklist: NewBlocklist(MaxBlocklistEntries)}
		local := r.LocalLimit
		if local == 0 {
			local = r.Limit
		}
		if local > 0 {
			z.shield = NewShield(local, r.Window, MaxShieldEntries)
		}
		z.args = []any{r.Limit, r.Window.Microseconds(), r.Ban.Strikes, max(r.Ban.Within.Milliseconds(), 1), r.Ban.Duration.Microseconds()}
		l.zones = append(l.zones, z)
	}
	return l
}

// SortTightestFirst orders rules by rate (limit per window), lowest first; ties by the
// shorter window. Stable, so equal rules keep the configured order.
func SortTightestFirst(rules []Rule) {
	sort.SliceStable(rules, func(i, j int) bool {
		a, b := rules[i], rules[j]
		// a.Limit/a.Window < b.Limit/b.Window without division.
		l, r := float64(a.Limit)*float64(b.Window), float64(b.Limit)*float64(a.Window)
		if l != r {
			return l < r
		}
		return a.Window < b.Window
	})
}

// Rules returns the rules in decision order.
func (l *Limiter) Rules() []*Rule {
	out := make([]*Rule, len(l.zones))
	for i, z := range l.zones {
		out[i] = &z.rule
	}
	return out
}

// ZoneStatus is one zone's section of the admin status page.
type ZoneStatus struct {
	Zone        string `json:"zone"`
	Limit       int    `json:"limit"`
	Window      string `json:"window"`
	Shadow      bool   `json:"shadow,omitempty"`
	FailClosed  bool   `json:"fail_closed,omitempty"`
	Blocklisted int    `json:"blocklisted_keys"`
	Shielded    int    `json:"shielded_keys"`
}

// Status reports the zones in decision order with the size of their local tiers.
func (l *Limiter) Status() []ZoneStatus {
	out := make([]ZoneStatus, len(l.zones))
	for i, z := range l.zones {
		out[i] = ZoneStatus{Zone: z.rule.Name, Limit: z.rule.Limit, Window: z.rule.Window.String(),
			Shadow: z.rule.Shadow, FailClosed: z.rule.FailClosed, Blocklisted: z.blocklist.Len()}
		if z.shield != nil {
			out[i].Shielded = z.shield.Len()
		}
	}
	return out
}

// ErrTimeout is the error of a decision whose Redis round trip took longer than the timeout.
var ErrTimeout = edge.ErrTimeout

// ErrShed is the error of a decision that was not sent because max_pending decisions were
// already waiting on Redis.
var ErrShed = edge.ErrShed

// Decide decides for one request. keys[i] is the request's key in zone i (Rules order);
// "" means the zone does not apply.
func (l *Limiter) Decide(ctx context.Context, keys []string) Decision {
	var room [3 * inlineZones]int
	d, pl := l.plan(&room, keys, l.Now())
	p := &pl
	if p.done || len(p.pending) == 0 {
		return d
	}
	calls := make([]Call, len(p.pending))
	for n, i := range p.pending {
		calls[n] = Call{Key: l.zones[i].counterKey(keys[i]), Args: l.zones[i].args}
	}
	d.RedisCalled = true
	start := time.Now()
	replies, err := edge.Call(ctx, edge.Caller{Timeout: l.timeout, Pending: l.Pending},
		func(ctx context.Context) ([]Reply, error) { return l.Store.Eval(ctx, calls) })
	d.RedisTime = time.Since(start)
	if err == nil && len(replies) != len(calls) {
		err = errReply
	}
	if err != nil {
		return l.failed(d, p, keys, err)
	}
	d, undo := l.merge(d, p, keys, replies, l.Now())
	if len(undo) > 0 {
		// The client has its answer already: give the admissions back in the background.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = l.Store.Undo(ctx, undo)
		}()
	}
	return d
}
