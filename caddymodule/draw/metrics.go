package draw

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// Package-level collectors registered into each config's registry, so counts survive reloads.
// Labelled by endpoint and outcome only: anyone can send any sale id.
var (
	requests = drawMetric.CounterVec("requests_total",
		"Draw requests by endpoint (enter, withdraw, status, challenge, page) and outcome (the state answered, or the refusal code).",
		"endpoint", "outcome")
	challenges = drawMetric.CounterVec("challenges_total",
		"Proof-of-work challenges of draws: issued, bounded (not issued: the user or his network holds too many open ones), solved (accepted at entry) and refused (missing, wrong, replayed, foreign, expired or below the minimum).",
		"outcome")
	shed = drawMetric.Counter("shed_total",
		"Draw requests answered 503 without touching Redis because max_pending calls were already waiting on it.")
)

const drawMetric = metric.Subsystem("draw")

func init() {
	for _, o := range []string{"issued", "bounded", "solved", "refused"} {
		challenges.WithLabelValues(o)
	}
}

func registerMetrics(reg prometheus.Registerer) {
	metric.Register(reg, requests, challenges, shed)
}
