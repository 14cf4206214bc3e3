package throttle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
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
// shield), then ONE Redis round trip carrying one script call per remaining zone (each zone's
// key lives on its own Cluster slot, so the calls are pipelined rather than merged).
type Limiter struct {
	rdb     redis.UniversalClient
	zones   []*zoneState
	timeout time.Duration

	// Now is the local clock used for the blocklist; tests replace it.
	Now func() time.Time

	// AutoPipeline sends the scripts through go-redis's shared asynchronous autopipeliner,
	// which coalesces the calls of concurrent requests into deep pipelines: at hundreds of
	// concurrent connections that divides the syscalls on both sides by the batch depth.
	// Off: one ordinary pipeline per request. Set it before the first Decide.
	AutoPipeline bool

	// Pending bounds the decisions waiting on Redis (nil: unbounded). A decision that finds
	// it full does not go to Redis: it fails with ErrShed and the zones' failure policies
	// apply, as when Redis does not answer. Set it before the first Decide.
	Pending *edge.Pending

	apOnce sync.Once
	ap     *redis.AutoPipeliner
}

type zoneState struct {
	rule      Rule
	blocklist *Blocklist
	shield    *Shield
	args      []any
}

// MaxBlocklistEntries bounds each zone's blocklist.
const MaxBlocklistEntries = 100_000

// NewLimiter builds a limiter over rules. The rules are sorted tightest first (lowest rate,
// then shortest window), so a local refusal by the tightest zone is found before the others
// are touched; Rules() gives the resulting order, which Decide's keys must follow.
func NewLimiter(rdb redis.UniversalClient, rules []Rule, timeout time.Duration) *Limiter {
	l := &Limiter{rdb: rdb, timeout: timeout, Now: time.Now}
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
			z.shield = NewShield(local, r.Window)
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
}

// Status reports the zones in decision order with the size of their blocklists.
func (l *Limiter) Status() []ZoneStatus {
	out := make([]ZoneStatus, len(l.zones))
	for i, z := range l.zones {
		out[i] = ZoneStatus{Zone: z.rule.Name, Limit: z.rule.Limit, Window: z.rule.Window.String(),
			Shadow: z.rule.Shadow, FailClosed: z.rule.FailClosed, Blocklisted: z.blocklist.Len()}
	}
	return out
}

// ErrTimeout is the error of a decision whose Redis round trip took longer than the timeout.
var ErrTimeout = errors.New("throttle: redis timeout")

// ErrShed is the error of a decision that was not sent because max_pending decisions were
// already waiting on Redis.
var ErrShed = errors.New("throttle: too many decisions waiting on redis (max_pending)")

// Decide decides for one request. keys[i] is the request's key in zone i (Rules order);
// "" means the zone does not apply.
func (l *Limiter) Decide(ctx context.Context, keys []string) Decision {
	d := Decision{Results: make([]ZoneResult, len(l.zones))}
	now := l.Now()
	var pending []int // zones that need Redis
	var taken []int   // zones whose shield counted this request
	var probes []int  // zones whose shield refused: their provisional blocklist entry awaits Redis

	refuse := func(i int, res ZoneResult) Decision {
		for _, j := range taken {
			l.zones[j].shield.Refund(keys[j])
		}
		d.Results[i] = res
		d.Status = 429
		d.RetryAfter = res.RetryAfter
		d.Banned = res.Banned
		return d
	}

	for i, z := range l.zones {
		key := keys[i]
		d.Results[i].Rule = &z.rule
		if key == "" {
			continue
		}
		if b, ok := z.blocklist.Lookup(key, now); ok {
			res := ZoneResult{Rule: &z.rule, Outcome: LocalHit, RetryAfter: b.Until.Sub(now), Reset: b.Until.Sub(now), Banned: b.Banned}
			if z.rule.Shadow {
				res.Outcome = ShadowLimited
				d.Results[i] = res
				continue
			}
			return refuse(i, res)
		}
		if z.shield != nil {
			ok, reset := z.shield.Take(key)
			if !ok {
				retry := max(reset.Sub(now), time.Second)
				res := ZoneResult{Rule: &z.rule, Outcome: LocalHit, RetryAfter: retry, Reset: retry}
				if z.rule.Shadow {
					res.Outcome = ShadowLimited
					d.Results[i] = res
					continue
				}
				// The first refusal of an episode still goes to Redis, as a probe: so that
				// the violation counts towards a ban on every instance, and the blocklist
				// gets Redis's exact retry time. Concurrent requests find the blocklist
				// entry and are refused here.
				if !z.blocklist.TryAdd(key, Block{Until: now.Add(retry)}, now) {
					return refuse(i, res)
				}
				probes = append(probes, i)
				pending = append(pending, i)
				continue
			}
			taken = append(taken, i)
		}
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		return d
	}

	d.RedisCalled = true
	start := time.Now()
	replies, err := l.eval(ctx, pending, keys)
	d.RedisTime = time.Since(start)
	now = l.Now()

	if err != nil {
		d.RedisErr = err
		for _, i := range pending {
			z := l.zones[i]
			if slices.Contains(probes, i) {
				// The shield refused this one; without Redis the shield has the last word.
				d.Results[i].Outcome = LocalHit
				d.Results[i].RetryAfter = time.Second
				if d.Status != 503 {
					d.Status, d.RetryAfter = 429, time.Second
				}
				continue
			}
			if z.rule.FailClosed && !z.rule.Shadow {
				d.Results[i].Outcome = FailedClosed
				if d.Status == 0 {
					d.Status, d.RetryAfter = 503, time.Second
				}
			} else {
				// Fail open, but the shield keeps its count: while Redis is away each
				// instance still holds every key to local_limit per window.
				d.Results[i].Outcome = FailedOpen
			}
		}
		if d.Status != 0 {
			l.refundShields(taken, keys)
		}
		return d
	}

	var admitted []int // zones whose Redis counter recorded this request
	for n, i := range pending {
		z := l.zones[i]
		rep := replies[n]
		res := &d.Results[i]
		res.Remaining, res.Reset = rep.remaining, rep.reset
		switch rep.status {
		case 0:
			res.Outcome = Allowed
			res.AdmittedAt = memberTime(rep.member)
			admitted = append(admitted, n)
			if slices.Contains(probes, i) {
				z.blocklist.Remove(keys[i]) // the exact tier had room after all
			}
			continue
		case 2:
			res.Outcome, res.Banned = Banned, true
		default:
			res.Outcome = Limited
		}
		res.RetryAfter = rep.retry
		if slices.Contains(taken, i) {
			z.shield.Refund(keys[i])
			taken = remove(taken, i)
		}
		if z.rule.Shadow {
			res.Outcome = ShadowLimited
			continue
		}
		if slices.Contains(probes, i) {
			// Redis's exact retry time replaces the shield's provisional one, shorter or not.
			z.blocklist.Set(keys[i], Block{Until: now.Add(rep.retry), Banned: res.Banned})
		} else {
			z.blocklist.Add(keys[i], Block{Until: now.Add(rep.retry), Banned: res.Banned}, now)
		}
		if d.Status == 0 || res.RetryAfter > d.RetryAfter {
			d.RetryAfter = res.RetryAfter
		}
		d.Status = 429
		d.Banned = d.Banned || res.Banned
	}
	if d.Status != 0 {
		// Another zone refused: the request never passes, so give back what the admitting
		// zones recorded, in the background (the client has its answer already).
		l.refundShields(taken, keys)
		var undo []refund
		for _, n := range admitted {
			i := pending[n]
			if !l.zones[i].rule.Shadow {
				undo = append(undo, refund{key: contract.ThrottleKey(l.zones[i].rule.Name, keys[i]), member: replies[n].member})
			}
		}
		if len(undo) > 0 {
			go l.undo(undo)
		}
	}
	return d
}

func remove(s []int, v int) []int {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

func (l *Limiter) refundShields(taken []int, keys []string) {
	for _, i := range taken {
		l.zones[i].shield.Refund(keys[i])
	}
}

type reply struct {
	status       int
	remaining    int
	reset, retry time.Duration
	member       string
}

var script = lua.Script("throttle")

// eval runs the zones' scripts in one pipeline, bounded by the limiter's timeout. The bound
// is enforced here rather than by the shared client's socket timeouts, which belong to the
// app and are tuned for every handler at once.
func (l *Limiter) eval(ctx context.Context, zones []int, keys []string) ([]reply, error) {
	type result struct {
		r   []reply
		err error
	}
	if !l.Pending.TryAcquire() {
		return nil, ErrShed
	}
	done := make(chan result, 1)
	// The Redis call itself runs without our deadline: cancelling a command mid-flight makes
	// go-redis discard its connection, and under load that turns slow answers into
	// reconnect storms. The call finishes on the client's own socket timeouts; the request
	// stops waiting for it after l.timeout.
	rctx := context.WithoutCancel(ctx)
	go func() {
		defer l.Pending.Release()
		r, missing, err := l.pipeline(rctx, zones, keys, false)
		if err == nil && len(missing) > 0 {
			// Re-send with the script body only the calls answered NOSCRIPT: on a Redis
			// Cluster each master caches scripts on its own, so the other calls of the
			// pipeline did run, and sending them again would count the request twice.
			sub := make([]int, len(missing))
			for k, n := range missing {
				sub[k] = zones[n]
			}
			var r2 []reply
			if r2, _, err = l.pipeline(rctx, sub, keys, true); err == nil {
				for k, n := range missing {
					r[n] = r2[k]
				}
			}
		}
		done <- result{r, err}
	}()
	timer := time.NewTimer(l.timeout)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.r, res.err
	case <-timer.C:
		return nil, ErrTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *Limiter) autopipeliner() *redis.AutoPipeliner {
	if !l.AutoPipeline {
		return nil
	}
	l.apOnce.Do(func() {
		if ap, err := l.rdb.AsyncAutoPipeline(); err == nil {
			l.ap = ap
		}
	})
	return l.ap
}

// pipeline sends one script call per zone in one pipeline. Without load (EVALSHA), the
// positions of the calls answered NOSCRIPT come back in missing, their replies left empty.
func (l *Limiter) pipeline(ctx context.Context, zones []int, keys []string, load bool) (out []reply, missing []int, err error) {
	cmds := make([]*redis.Cmd, len(zones))
	queue := func(s redis.Scripter) {
		for n, i := range zones {
			z := l.zones[i]
			k := contract.ThrottleKey(z.rule.Name, keys[i])
			ks := []string{k, k + ":ban"}
			if load {
				cmds[n] = script.Eval(ctx, s, ks, z.args...)
			} else {
				cmds[n] = script.EvalSha(ctx, s, ks, z.args...)
			}
		}
	}
	if ap := l.autopipeliner(); ap != nil {
		// The calls return at once; reading a result waits for the batch that carried it.
		queue(ap)
	} else {
		// Each command carries its own error, read below: a NOSCRIPT of one is not a
		// failure of the others.
		_, _ = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
	}
	out = make([]reply, len(zones))
	for n, c := range cmds {
		v, err := c.Slice()
		if err != nil && !load && isNoScript(err) {
			missing = append(missing, n)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if len(v) != 5 {
			return nil, nil, errors.New("throttle: unexpected script reply")
		}
		st, _ := v[0].(int64)
		rem, _ := v[1].(int64)
		reset, _ := v[2].(int64)
		retry, _ := v[3].(int64)
		member, _ := v[4].(string)
		out[n] = reply{status: int(st), remaining: int(rem), reset: time.Duration(reset) * time.Microsecond,
			retry: time.Duration(retry) * time.Microsecond, member: member}
	}
	return out, missing, nil
}

// memberTime reads the Redis time of an admission from its sorted-set member "<t_us>-<n>".
func memberTime(member string) time.Time {
	us, _, _ := strings.Cut(member, "-")
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMicro(n)
}

func isNoScript(err error) bool {
	return err != nil && strings.Contains(err.Error(), "NOSCRIPT")
}

type refund struct{ key, member string }

func (l *Limiter) undo(rs []refund) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range rs {
			p.ZRem(ctx, r.key, r.member)
		}
		return nil
	})
}
