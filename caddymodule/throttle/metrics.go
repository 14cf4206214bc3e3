package throttle

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// Package-level collectors, registered into each config's registry: counters survive config
// reloads. Labels are bounded: zone names come from the config, outcomes from a fixed set;
// never a client key or IP (mholt/caddy-ratelimit keeps one series per client key).
var (
	decisions = throttleMetric.CounterVec("decisions_total",
		"Throttle decisions by zone and outcome (allowed, limited, banned, shadow_limited, local_hit, failed_open, failed_closed; allowlisted with an empty zone).",
		"zone", "outcome")
	redisSeconds = throttleMetric.HistogramVec("redis_seconds",
		"Duration of the one Redis round trip of a throttle decision, by result (ok, error, shed: not sent because max_pending decisions were waiting).",
		[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25}, "result")
)

const throttleMetric = metric.Subsystem("throttle")

func registerMetrics(reg prometheus.Registerer) {
	metric.Register(reg, decisions, redisSeconds)
}
