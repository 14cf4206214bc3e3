package room

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule"
)

// Package-level collectors registered into each config's registry, so counts survive
// reloads. Counters are labelled by outcome only: anyone can send any sale id. The gauges
// carry a sale label, set only for sales that have a room (created by an operator), so their
// series stay as few as the rooms.
var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "room", Name: "requests_total",
		Help: "Waiting-room requests by endpoint (room, challenge, enter, poll, prequeue, page) and answer (the state, or the refusal code).",
	}, []string{"endpoint", "answer"})
	entries = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "room", Name: "entries_total",
		Help: "Entries into a waiting room answered with a place (entering again counts again).",
	})
	challenges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "room", Name: "challenges_total",
		Help: "Proof-of-work challenges: issued, solved (accepted at entry) and refused (wrong, replayed, foreign, expired or too easy).",
	}, []string{"outcome"})
	admissions = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "room", Name: "admissions_total",
		Help: "Places admitted by the scripts this gateway ran.",
	})
	lapsed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "room", Name: "lapsed_total",
		Help: "Admissions that ran out unused, seen by the scripts this gateway ran.",
	})
	depth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "seckill", Subsystem: "room", Name: "queue_depth",
		Help: "Places not yet admitted, as last seen by this gateway.",
	}, []string{"sale"})
	rateGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "seckill", Subsystem: "room", Name: "admission_rate",
		Help: "The room's admission rate setting (admissions per second); rate(seckill_room_admissions_total) is the rate achieved.",
	}, []string{"sale"})
	shed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "room", Name: "shed_total",
		Help: "Room requests answered 503 without touching Redis because max_pending calls were already waiting on it.",
	})
	wait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "seckill", Subsystem: "room", Name: "estimated_wait_seconds",
		Help:    "Estimated waits answered to waiters.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
	})
)

func init() {
	for _, o := range []string{"issued", "solved", "refused"} {
		challenges.WithLabelValues(o)
	}
}

func registerMetrics(reg prometheus.Registerer) {
	caddymodule.Register(reg, requests, entries, challenges, admissions, lapsed, depth, rateGauge, wait, shed)
}
