package core

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// plan is what the local tiers decided besides the decision itself (kept apart from it, so
// that the lists can live on the caller's stack): which zones still need Redis.
type plan struct {
	done    bool  // a local tier refused: no Redis call
	pending []int // zones that need Redis
	taken   []int // zones whose shield counted this request
	probes  []int // zones whose shield refused: their provisional blocklist entry awaits Redis
}

// inlineZones is how many zones a plan on the caller's stack holds without allocating.
const inlineZones = 8

// newPlan is an empty plan whose lists use room (the caller's stack) up to inlineZones each.
func newPlan(room *[3 * inlineZones]int) plan {
	return plan{pending: room[0:0:inlineZones], taken: room[inlineZones : inlineZones : 2*inlineZones],
		probes: room[2*inlineZones : 2*inlineZones : 3*inlineZones]}
}

func (z *zoneState) counterKey(key string) string { return contract.ThrottleKey(z.rule.Name, key) }

// plan runs the local tiers (blocklist, then flood shield) of every zone at time now. Its
// lists use room up to inlineZones zones each (the plan is built here and returned by value:
// storing room's slices through a pointer would move room to the heap).
func (l *Limiter) plan(room *[3 * inlineZones]int, keys []string, now time.Time) (Decision, plan) {
	p := newPlan(room)
	d := Decision{Results: make([]ZoneResult, len(l.zones))}
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
			l.refuseLocally(&d, &p, keys, i, res)
			return d, p
		}
		if z.shield != nil {
			ok, reset := z.shield.Take(key, now)
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
					l.refuseLocally(&d, &p, keys, i, res)
					return d, p
				}
				p.probes = append(p.probes, i)
				p.pending = append(p.pending, i)
				continue
			}
			p.taken = append(p.taken, i)
		}
		p.pending = append(p.pending, i)
	}
	return d, p
}

func (l *Limiter) refuseLocally(d *Decision, p *plan, keys []string, i int, res ZoneResult) {
	l.refundShields(p.taken, keys)
	d.Results[i] = res
	d.Status, d.RetryAfter, d.Banned = 429, res.RetryAfter, res.Banned
	p.done = true
}

// failed applies the zones' failure policies when the exact tier did not answer.
func (l *Limiter) failed(d Decision, p *plan, keys []string, err error) Decision {
	d.RedisErr = err
	for _, i := range p.pending {
		z := l.zones[i]
		switch {
		case slices.Contains(p.probes, i):
			// The shield refused this one; without Redis the shield has the last word.
			d.Results[i].Outcome = LocalHit
			d.Results[i].RetryAfter = time.Second
			if d.Status != 503 {
				d.Status, d.RetryAfter = 429, time.Second
			}
		case z.rule.FailClosed && !z.rule.Shadow:
			d.Results[i].Outcome = FailedClosed
			if d.Status == 0 {
				d.Status, d.RetryAfter = 503, time.Second
			}
		default:
			// Fail open, but the shield keeps its count: while Redis is away each instance
			// still holds every key to local_limit per window.
			d.Results[i].Outcome = FailedOpen
		}
	}
	if d.Status != 0 {
		l.refundShields(p.taken, keys)
	}
	return d
}

// merge folds the exact tier's replies (one per pending zone) into the decision at time now,
// feeding the blocklists. undo lists the admissions to take back when another zone refused.
func (l *Limiter) merge(d Decision, p *plan, keys []string, replies []Reply, now time.Time) (_ Decision, undo []Refund) {
	var room [2 * inlineZones]int
	taken := append(room[0:0:inlineZones], p.taken...)
	admitted := room[inlineZones:inlineZones] // positions in pending whose Redis counter recorded this request
	for n, i := range p.pending {
		z := l.zones[i]
		rep := replies[n]
		res := &d.Results[i]
		res.Remaining, res.Reset = rep.Remaining, rep.Reset
		probe := slices.Contains(p.probes, i)
		switch rep.Status {
		case 0:
			res.Outcome = Allowed
			res.AdmittedAt = memberTime(rep.Member)
			admitted = append(admitted, n)
			if probe {
				z.blocklist.Remove(keys[i]) // the exact tier had room after all
			}
			continue
		case 2:
			res.Outcome, res.Banned = Banned, true
		default:
			res.Outcome = Limited
		}
		res.RetryAfter = rep.Retry
		if k := slices.Index(taken, i); k >= 0 {
			z.shield.Refund(keys[i])
			taken = slices.Delete(taken, k, k+1)
		}
		if z.rule.Shadow {
			res.Outcome = ShadowLimited
			continue
		}
		if probe {
			// Redis's exact retry time replaces the shield's provisional one, shorter or not.
			z.blocklist.Set(keys[i], Block{Until: now.Add(rep.Retry), Banned: res.Banned}, now)
		} else {
			z.blocklist.Add(keys[i], Block{Until: now.Add(rep.Retry), Banned: res.Banned}, now)
		}
		if d.Status == 0 || res.RetryAfter > d.RetryAfter {
			d.RetryAfter = res.RetryAfter
		}
		d.Status = 429
		d.Banned = d.Banned || res.Banned
	}
	if d.Status != 0 {
		// Another zone refused: the request never passes, so give back what the admitting
		// zones recorded.
		l.refundShields(taken, keys)
		for _, n := range admitted {
			i := p.pending[n]
			if !l.zones[i].rule.Shadow {
				undo = append(undo, Refund{Key: l.zones[i].counterKey(keys[i]), Member: replies[n].Member})
			}
		}
	}
	return d, undo
}

func (l *Limiter) refundShields(taken []int, keys []string) {
	for _, i := range taken {
		l.zones[i].shield.Refund(keys[i])
	}
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
