package token

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/token/core"
)

// Package-level collectors, registered into each config's registry, so counts survive config
// reloads. Labels are bounded: the outcome only. No sale label: anyone can send any sale id,
// and unknown ones must not mint series.
var (
	requests = tokenMetric.CounterVec("requests_total",
		"Purchase-token requests by outcome: issued, or the refusal (unauthenticated, bad_request, method_not_allowed, unknown_sale, not_started, ended, paused, already_bought, sold_out, not_admitted, unavailable; misconfigured: a room sale reached a handler without require_admission; room_missing: a room sale whose room state is gone; draw_missing: a draw sale reached the script without its entries key; proof_refused: a DPoP proof missing under device_binding required, or not valid; bot_refused: the challenge provider's token missing or not good, or the provider unavailable on a site that fails closed).",
		"outcome")
	shed = tokenMetric.Counter("shed_total",
		"Token requests answered 503 without touching Redis because max_pending scripts were already waiting on it.")
	duration = tokenMetric.Histogram("request_duration_seconds",
		"Time to decide a purchase-token request, Redis round trip included.",
		.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1)
)

const tokenMetric = metric.Subsystem("token")

// counted is the requests counter of each outcome, bound once: every outcome is visible from
// the start, at zero, and a request does not hash its label (WithLabelValues).
var counted = func() map[core.Outcome]prometheus.Counter {
	m := map[core.Outcome]prometheus.Counter{}
	for _, o := range core.Outcomes() {
		m[o] = requests.WithLabelValues(string(o))
	}
	m[ProofRefused] = requests.WithLabelValues(string(ProofRefused))
	m[BotRefused] = requests.WithLabelValues(string(BotRefused))
	return m
}()

func registerMetrics(reg prometheus.Registerer) {
	metric.Register(reg, requests, duration, shed, botcheckcaddy.Challenges)
}

func observe(o core.Outcome, d time.Duration) {
	if c, ok := counted[o]; ok {
		c.Inc()
	} else {
		requests.WithLabelValues(string(o)).Inc()
	}
	duration.Observe(d.Seconds())
}
