package relay

import "github.com/prometheus/client_golang/prometheus"

// Package-level collectors: the app registers them into each config's registry, so counters
// keep counting across config reloads. The sale label is a sale (or shard) of the relay's own
// namespace, read from the sales index, never user input.
var (
	relayBacklog = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "seckill", Subsystem: "relay", Name: "backlog",
		Help: "Entries in a sale's outbox not yet confirmed by RabbitMQ (as of the relay's last scan).",
	}, []string{"sale"})
	relayPublishSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "seckill", Subsystem: "relay", Name: "publish_seconds",
		Help:    "Time from publishing an order to RabbitMQ to its publisher confirm.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 5},
	})
	relayPublished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "relay", Name: "published_total",
		Help: "Orders confirmed by RabbitMQ and removed from the outbox.",
	}, []string{"sale"})
	relayNacked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "relay", Name: "nacked_total",
		Help: "Publishes not confirmed (nack, return, timeout or lost channel); each stays in the outbox and is sent again.",
	}, []string{"sale"})
)

// Collectors are the relay's metrics, for the app to register.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{relayBacklog, relayPublishSeconds, relayPublished, relayNacked}
}
