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
	"github.com/seckilledge/seckill/contract"
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

	// masks[set] is the enforce mask of the zones in the bit set (mask), for inlineZones zones
	// or fewer.
	masks []string

	// Pending bounds the decisions waiting on the Store (nil: unbounded). A decision that
	// finds it full does not go to Redis: it fails with ErrShed and the zones' failure
	// policies apply, as when Redis does not answer. Set it before the first Decide.
	Pending *edge.Pending
}

// mask is the enforce mask of the pending zones (lua.Throttled's last argument): "1" for a
// zone that may refuse, "0" for a shadow zone, in pending order. set is the bit set of the
// pending zones; with at most inlineZones zones the string comes from a table made once.
func (l *Limiter) mask(pending []int, set int) string {
	if set < len(l.masks) && len(l.zones) <= inlineZones {
		return l.masks[set]
	}
	b := make([]byte, len(pending))
	for n, i := range pending {
		b[n] = '1'
		if l.zones[i].rule.Shadow {
			b[n] = '0'
		}
	}
	return string(b)
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
	if len(l.zones) <= inlineZones {
		l.masks = make([]string, 1<<len(l.zones))
		for set := range l.masks {
			var b []byte
			for i, z := range l.zones {
				if set&(1<<i) == 0 {
					continue
				}
				if z.rule.Shadow {
					b = append(b, '0')
				} else {
					b = append(b, '1')
				}
			}
			l.masks[set] = string(b)
		}
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
	var j Joint
	if l.start(&j, keys) {
		return j.d
	}
	calls := j.calls()
	j.d.RedisCalled = true
	start := time.Now()
	replies, err := edge.Call(ctx, l.caller(),
		func(ctx context.Context) ([]Reply, error) { return l.Store.Eval(ctx, calls) })
	j.d.RedisTime = time.Since(start)
	return j.finish(replies, err)
}

// caller bounds the limiter's Store calls; inline (no goroutine per call) when the Store waits
// for its answers with edge.Wait (RedisStore on the deferred autopipeliner).
func (l *Limiter) caller() edge.Caller {
	c := edge.Caller{Timeout: l.timeout, Pending: l.Pending}
	if s, ok := l.Store.(interface{ Inline() bool }); ok {
		c.Inline = s.Inline()
	}
	return c
}

// Joint is a decision whose exact tier runs inside another script's call: the zones that need
// Redis go, as lua/throttle.lua's KEYS and ARGV, into the next handler's script
// (lua.GateThrottled, lua.TokenIssueThrottled), whose reply brings their answers back. So a
// purchase behind a throttle costs one round trip on a single Redis. The merge of the answers
// is Decide's: the same refusals, the same blocklist and shield bookkeeping, the same refunds.
type Joint struct {
	l    *Limiter
	d    Decision
	p    plan
	keys []string
	room [3 * inlineZones]int
	// keep holds the keys of a deferred decision (the caller's slice may live on its stack).
	keep [inlineZones]string
}

// DeferTo runs the local tiers for one request (keys as Decide's) into j. It reports true
// when they settle the decision (a local refusal, or no zone that needs Redis: j.Decision);
// otherwise j's AppendKeys and AppendArgs go into the other script and its Answer takes the
// reply.
func (l *Limiter) DeferTo(j *Joint, keys []string) (settled bool) {
	*j = Joint{}
	return l.start(j, append(j.keep[:0], keys...))
}

// Decision is the joint's decision: settled by the local tiers (DeferTo), or as Answer or
// Alone last returned it.
func (j *Joint) Decision() *Decision { return &j.d }

// start plans the request into j; it reports whether the plan settles the decision.
func (l *Limiter) start(j *Joint, keys []string) bool {
	j.l, j.keys = l, keys
	j.d, j.p = l.plan(&j.room, keys, l.Now())
	return j.p.done || len(j.p.pending) == 0
}

func (j *Joint) calls() []Call {
	calls := make([]Call, len(j.p.pending))
	for n, i := range j.p.pending {
		calls[n] = Call{Key: j.l.zones[i].counterKey(j.keys[i]), Args: j.l.zones[i].args}
	}
	return calls
}

// AppendKeys appends the zones' KEYS for lua/throttle.lua (two per zone that needs Redis).
func (j *Joint) AppendKeys(dst []string) []string {
	for _, i := range j.p.pending {
		// The counter's key and its ban key in one string: "<counter>:ban", sliced.
		ban := contract.ThrottleKey(j.l.zones[i].rule.Name, j.keys[i]) + ":ban"
		dst = append(dst, ban[:len(ban)-len(":ban")], ban)
	}
	return dst
}

// AppendArgs appends the zones' ARGV for lua/throttle.lua (five per zone), then the zone count
// and the mask of the zones that may refuse ("1"; "0" for a shadow zone), as lua.Throttled
// takes them.
func (j *Joint) AppendArgs(dst []any) []any {
	var set int
	for n, i := range j.p.pending {
		dst = append(dst, j.l.zones[i].args...)
		if n < inlineZones {
			set |= 1 << i
		}
	}
	return append(dst, len(j.p.pending), j.l.mask(j.p.pending, set))
}

// Answer merges the zones' part of the combined reply (lua/throttle.lua's flat reply, five
// items per zone), or applies the zones' failure policies when err says the call did not
// answer, and returns the decision.
func (j *Joint) Answer(reply []any, err error) Decision {
	if err != nil {
		return j.finish(nil, err)
	}
	if len(reply) != 5*len(j.p.pending) {
		return j.finish(nil, errReply)
	}
	replies := make([]Reply, len(j.p.pending))
	for n := range replies {
		if replies[n], err = parseReply(reply[5*n : 5*n+5]); err != nil {
			return j.finish(nil, err)
		}
	}
	return j.finish(replies, nil)
}

// Alone runs the zones' exact tier in a round trip of their own: the next handler answered
// without a script of its own (a request it refused before Redis).
func (j *Joint) Alone(ctx context.Context) Decision {
	calls := j.calls()
	j.d.RedisCalled = true
	start := time.Now()
	replies, err := edge.Call(ctx, j.l.caller(),
		func(ctx context.Context) ([]Reply, error) { return j.l.Store.Eval(ctx, calls) })
	j.d.RedisTime = time.Since(start)
	return j.finish(replies, err)
}

// Skip settles the joint without its exact tier: the next handler answered from its own
// memory, with no script call (a click on a sale this gateway knows is sold out). Only the
// local tiers' verdict stands: DeferTo already refused a key in the blocklist (a ban or a
// limit learnt from Redis); a zone whose shield refused this request, whose first refusal of
// an episode would have gone to Redis as a probe, refuses it here, its provisional blocklist
// entry kept; every other zone admits it without counting (its outcome stays Skipped) and
// its shield keeps the request counted, so a flood on a sold-out sale is still held to
// local_limit per window on each instance. Nothing reaches Redis, so nothing counts towards a
// ban either.
func (j *Joint) Skip() Decision {
	l, d, p, keys := j.l, j.d, &j.p, j.keys
	now := l.Now()
	for _, i := range p.probes {
		z := l.zones[i]
		retry := time.Second
		if b, ok := z.blocklist.Lookup(keys[i], now); ok && b.Until.After(now) {
			retry = b.Until.Sub(now)
		}
		d.Results[i] = ZoneResult{Rule: &z.rule, Outcome: LocalHit, RetryAfter: retry, Reset: retry}
		if d.Status == 0 || retry > d.RetryAfter {
			d.RetryAfter = retry
		}
		d.Status = 429
	}
	if d.Status != 0 {
		l.refundShields(p.taken, keys)
	}
	return d
}

// giveBackTimeout bounds the background call that gives back the admissions of a request
// another zone refused.
const giveBackTimeout = 5 * time.Second

func (j *Joint) finish(replies []Reply, err error) Decision {
	l, d, p, keys := j.l, j.d, &j.p, j.keys
	if err == nil && len(replies) != len(p.pending) {
		err = errReply
	}
	if err != nil {
		return l.failed(d, p, keys, err)
	}
	d, undo := l.merge(d, p, keys, replies, l.Now())
	if len(undo) > 0 {
		// The client has its answer already: give the admissions back in the background.
		// Nobody waits on the give-back, so its bound is generous (a busy Redis or a busy
		// gateway must not drop it: a dropped one leaves the zone counting a request that
		// never passed); it is not the decision's timeout.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), giveBackTimeout)
			defer cancel()
			_ = l.Store.Undo(ctx, undo)
		}()
	}
	return d
}
