package gate

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// Package-level collectors, registered into each config's registry with metric.Register,
// so counters keep counting across config reloads. Labels are bounded: a sale label is only
// ever a sale that exists in Redis (refusals decided before Redis carry sale=""), never a user.
var (
	decisions = gateMetric.CounterVec("decisions_total",
		"Purchase decisions by sale and outcome (accepted or a refusal code; misconfigured: a waiting-room sale reached a gate without require_admission; room_missing: its room state is gone; draw_missing: a draw sale reached the script without its entries key).", "sale", "outcome")
	scriptSeconds = gateMetric.Histogram("script_seconds",
		"Latency of the decision script round trip, including queueing in the pipeline.",
		.0002, .0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1)
	shed = gateMetric.Counter("shed_total",
		"Purchases answered 503 without a decision because max_pending decisions were already waiting on Redis.")
)

const gateMetric = metric.Subsystem("gate")

// saleCounters holds the decision counter of each sale and outcome, bound the first time it
// counts (a sale is dynamic, so it cannot be bound at provision) and kept: a decision reads
// two maps under a read lock, without hashing labels (WithLabelValues) or boxing a key.
var saleCounters = struct {
	sync.RWMutex
	m map[string]map[core.Outcome]prometheus.Counter
}{m: map[string]map[core.Outcome]prometheus.Counter{}}

func countDecision(sale string, o core.Outcome) {
	saleCounters.RLock()
	c, ok := saleCounters.m[sale][o]
	saleCounters.RUnlock()
	if !ok {
		saleCounters.Lock()
		if c, ok = saleCounters.m[sale][o]; !ok {
			c = decisions.WithLabelValues(sale, string(o))
			if saleCounters.m[sale] == nil {
				saleCounters.m[sale] = map[core.Outcome]prometheus.Counter{}
			}
			saleCounters.m[sale][o] = c
		}
		saleCounters.Unlock()
	}
	c.Inc()
}

func collectors() []prometheus.Collector {
	return []prometheus.Collector{decisions, scriptSeconds, shed}
}
