package room

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
)

// Package-level collectors registered into each config's registry, so counts survive
// reloads. Counters are labelled by outcome only: anyone can send any sale id. The gauges
// carry a sale label, set only for sales that have a room (created by an operator), so their
// series stay as few as the rooms.
var (
	kitMetrics = roomkit.NewMetrics(roomMetric, "answer",
		"Waiting-room requests by endpoint (room, challenge, enter, poll, leave, prequeue, page) and answer (the state, or the refusal code).",
		"Waiting-room requests")
	entries = roomMetric.Counter("entries_total",
		"Entries into a waiting room answered with a place (entering again counts again).")
	leaves          = roomMetric.Counter("leaves_total", "Places given up by their waiters (DELETE /queue).")
	fromMemoryPolls = roomMetric.Counter("polls_from_memory_total",
		"Polls this gateway answered from its summary of the room, without Redis (far from the front, or before the start).")
	admissions = roomMetric.Counter("admissions_total", "Places admitted by the scripts this gateway ran.")
	lapsed     = roomMetric.Counter("lapsed_total", "Admissions that ran out unused, seen by the scripts this gateway ran.")
	depth      = roomMetric.GaugeVec("queue_depth", "Places not yet admitted, as last seen by this gateway.", "sale")
	rateGauge  = roomMetric.GaugeVec("admission_rate",
		"The room's admission rate setting (admissions per second); rate(seckill_room_admissions_total) is the rate achieved.",
		"sale")
	revokedTotal = roomMetric.Counter("revoked_total",
		"Live admissions ended because the throttle bans their user (ban_zones), by this gateway.")
	flagged = roomMetric.CounterVec("flagged_total",
		"Entries flagged, by sale and reason (challenge: the bot challenge's verdict; ban: a throttle ban; rule: a flag matcher): "+
			"entered and answered like any other, never admitted (entering again counts again).", "sale", "reason")
	wait = roomMetric.Histogram("estimated_wait_seconds", "Estimated waits answered to waiters.",
		1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)
)

// gatewayCounts are the counters of what the room's core does (core.Gateway).
var gatewayCounts = core.Counts{Admissions: admissions, Lapsed: lapsed, FromMemory: fromMemoryPolls, Revoked: revokedTotal,
	Rate: func(sale string, rate float64) { rateGauge.WithLabelValues(sale).Set(rate) }}

const roomMetric = metric.Subsystem("room")

// roomCollectors are the room's own collectors, beyond the kit's.
var roomCollectors = []prometheus.Collector{entries, leaves, fromMemoryPolls, admissions, lapsed, depth, rateGauge, wait, revokedTotal, flagged}
