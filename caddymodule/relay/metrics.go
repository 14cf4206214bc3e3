package relay

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// Package-level collectors: the app registers them into each config's registry, so counters
// keep counting across config reloads. The sale label is a sale (or shard) of the relay's own
// namespace, read from the sales index, never user input.
var (
	relayBacklog = relayMetric.GaugeVec("backlog",
		"Entries in a sale's outbox not yet confirmed by RabbitMQ (as of the relay's last scan).", "sale")
	relayPublishSeconds = relayMetric.Histogram("publish_seconds",
		"Time from publishing an order to RabbitMQ to its publisher confirm.",
		.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 5)
	relayRoundEntries = relayMetric.Histogram("round_entries",
		"Orders published together in one round of the relay, waiting for their confirms together.",
		1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
	relayPublished = relayMetric.CounterVec("published_total",
		"Orders confirmed by RabbitMQ and removed from the outbox.", "sale")
	relayNacked = relayMetric.CounterVec("nacked_total",
		"Publishes not confirmed (nack, return, timeout or lost channel); each stays in the outbox and is sent again.", "sale")
)

const relayMetric = metric.Subsystem("relay")

// Collectors are the relay's metrics, for the app to register.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{relayBacklog, relayPublishSeconds, relayRoundEntries, relayPublished, relayNacked}
}
