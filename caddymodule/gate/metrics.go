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

// decisionCounters caches the child counter of each (sale, outcome): WithLabelValues hashes
// the labels on every call, and after sell-out that is a noticeable part of a request.
var decisionCounters sync.Map // decisionKey -> prometheus.Counter

type decisionKey struct{ sale, outcome string }

func countDecision(sale string, o core.Outcome) {
	k := decisionKey{sale, string(o)}
	c, ok := decisionCounters.Load(k)
	if !ok {
		c, _ = decisionCounters.LoadOrStore(k, decisions.WithLabelValues(sale, string(o)))
	}
	c.(prometheus.Counter).Inc()
}

func collectors() []prometheus.Collector {
	return []prometheus.Collector{decisions, scriptSeconds, shed}
}
