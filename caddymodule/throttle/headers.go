package throttle

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// writeHeaders sets the rate-limit headers from the binding zone: the refusing zone, else
// the zone with the fewest admissions left.
func (h *Handler) writeHeaders(w http.ResponseWriter, d *Decision) {
	if h.Headers == "none" {
		return
	}
	var bind *ZoneResult
	var mask uint64 // the zones named in RateLimit-Policy
	for i := range d.Results {
		res := &d.Results[i]
		if res.Outcome == Skipped || res.Outcome == FailedOpen || res.Outcome == FailedClosed || res.Rule.Shadow {
			continue
		}
		mask |= 1 << i
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
func (h *Handler) policies(d *Decision, mask uint64) string {
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

func joinPolicies(d *Decision, mask uint64) string {
	var policies []string
	for i := range d.Results {
		if mask&(1<<i) != 0 {
			policies = append(policies, policyOf(d.Results[i].Rule))
		}
	}
	return strings.Join(policies, ", ")
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
