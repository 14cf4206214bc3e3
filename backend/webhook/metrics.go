package webhook

import "github.com/prometheus/client_golang/prometheus"

// The worker's metrics (stable names: dashboards and alerts use them).
// The backend registers them on its registry through Collectors.
var (
	metricDelivered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_webhooks_delivered_total",
		Help: "Webhook events the shop's receiver acknowledged (2xx).",
	})
	metricFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_webhook_attempts_failed_total",
		Help: "Webhook attempts that failed (error, timeout, non-2xx answer) and will be retried or parked.",
	})
	metricDead = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_webhooks_dead_total",
		Help: "Webhook events parked dead after their last attempt (replay: POST /admin/webhooks/{id}/replay).",
	})
	metricLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_backend_webhook_lag_seconds",
		Help:    "Time from an order change to the shop's acknowledgement of its event.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 18),
	})
	metricOldest = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seckill_backend_webhook_oldest_pending_seconds",
		Help: "Age of the oldest webhook event not delivered yet (0: none pending).",
	})
)

// Collectors are the worker's metrics, for the backend's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricDelivered, metricFailed, metricDead, metricLag, metricOldest}
}
