package throttle

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/throttle/core"
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

// The Redis round trip's histogram per result, resolved once: WithLabelValues hashes its
// labels and takes the vector's lock on every call.
var (
	redisOK    = redisSeconds.WithLabelValues("ok")
	redisShed  = redisSeconds.WithLabelValues("shed")
	redisError = redisSeconds.WithLabelValues("error")
)

// outcomes are the outcomes a zone counts, in zoneCounters order.
var outcomes = [...]core.Outcome{core.Allowed, core.Limited, core.Banned, core.ShadowLimited, core.LocalHit, core.FailedOpen, core.FailedClosed}

// zoneCounters are one zone's decision counters, one per outcome, each looked up in the
// vector the first time it counts and kept (a series appears when it first counts, as with
// WithLabelValues per decision, but a decision no longer hashes labels).
type zoneCounters struct {
	zone string
	c    [len(outcomes)]atomic.Pointer[prometheus.Counter]
}

// inc counts one decision with outcome o (not Skipped).
func (z *zoneCounters) inc(o core.Outcome) {
	i := outcomeIndex(o)
	if i < 0 {
		decisions.WithLabelValues(z.zone, string(o)).Inc()
		return
	}
	p := z.c[i].Load()
	if p == nil {
		c := decisions.WithLabelValues(z.zone, string(o))
		p = &c
		z.c[i].Store(p)
	}
	(*p).Inc()
}

func outcomeIndex(o core.Outcome) int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return -1
}

// allowlisted counts the requests the allow list let through (zone "").
var allowlisted = &zoneCounters{}

func (z *zoneCounters) incAllowlisted() {
	p := z.c[0].Load()
	if p == nil {
		c := decisions.WithLabelValues("", "allowlisted")
		p = &c
		z.c[0].Store(p)
	}
	(*p).Inc()
}
