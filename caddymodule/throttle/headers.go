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
