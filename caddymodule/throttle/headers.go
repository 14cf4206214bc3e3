package throttle

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/caddymodule/throttle/core"
)

// writeHeaders sets the rate-limit headers from the binding zone: the refusing zone, else
// the zone with the fewest admissions left.
func (h *Handler) writeHeaders(w http.ResponseWriter, d *core.Decision) {
	if h.Headers == "none" {
		return
	}
	var bind *core.ZoneResult
	var mask uint64 // the zones named in RateLimit-Policy
	for i := range d.Results {
		res := &d.Results[i]
		if res.Outcome == core.Skipped || res.Outcome == core.FailedOpen || res.Outcome == core.FailedClosed || res.Rule.Shadow {
			continue
		}
		mask |= 1 << i
		switch {
		case res.Outcome != core.Allowed:
			if bind == nil || bind.Outcome == core.Allowed {
				bind = res // the (first, tightest) refusing zone
			}
		case bind == nil || (bind.Outcome == core.Allowed && res.Remaining < bind.Remaining):
			bind = res
		}
	}
	if bind == nil {
		return
	}
	remaining, reset := bind.Remaining, ceilSeconds(bind.Reset)
	if bind.Outcome != core.Allowed {
		remaining, reset = 0, ceilSeconds(bind.RetryAfter)
	}
	// The keys in canonical form (Header.Set would canonicalise them, allocating each time)
	// and the values in one backing array, each capped to its own element.
	hdr := w.Header()
	if h.Headers == "legacy" {
		v := make([]string, 3)
		v[0], v[1], v[2] = strconv.Itoa(bind.Rule.Limit), strconv.Itoa(remaining), strconv.FormatInt(reset, 10)
		hdr["X-Ratelimit-Limit"], hdr["X-Ratelimit-Remaining"], hdr["X-Ratelimit-Reset"] = v[0:1:1], v[1:2:2], v[2:3:3]
		return
	}
	v := make([]string, 2)
	v[0] = h.policies(d, mask)
	v[1] = `"` + bind.Rule.Name + `";r=` + strconv.Itoa(remaining) + ";t=" + strconv.FormatInt(reset, 10)
	hdr["Ratelimit-Policy"], hdr["Ratelimit"] = v[0:1:1], v[1:2:2]
}

// policies is the RateLimit-Policy value of the zones in mask (bit i: d.Results[i]), joined
// once per combination of zones when there are at most maxPolicyZones.
func (h *Handler) policies(d *core.Decision, mask uint64) string {
	if len(d.Results) > maxPolicyZones || len(h.policy) == 0 {
		return joinPolicies(d, mask)
	}
	if p := h.policy[mask].Load(); p != nil {
		return *p
	}
	s := joinPolicies(d, mask)
	h.policy[mask].Store(&s)
	return s
}

// maxPolicyZones bounds the zones whose RateLimit-Policy combinations are kept (2^n of them).
const maxPolicyZones = 8

func joinPolicies(d *core.Decision, mask uint64) string {
	var policies []string
	for i := range d.Results {
		if mask&(1<<i) != 0 {
			policies = append(policies, policyOf(d.Results[i].Rule))
		}
	}
	return strings.Join(policies, ", ")
}

// policyOf is the zone's RateLimit-Policy item.
func policyOf(r *core.Rule) string { return r.Policy() }

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
