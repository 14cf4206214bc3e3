package orders

import "github.com/prometheus/client_golang/prometheus"

// The consumer's, the writer's, the compensator's and the sweeper's metrics (their names are part of the
// public surface: dashboards and alerts use them). Labels are bounded: an outcome or a reason from a
// fixed set, never a sale, order or user id. The backend registers them through Collectors.
var (
	metricConsumed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_messages_consumed_total",
		Help: "Order messages taken from RabbitMQ, by outcome (created, duplicate, failed, dead_lettered).",
	}, []string{"outcome"})
	metricBatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_backend_batch_size",
		Help:    "Messages per database transaction of the order writer.",
		Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2000},
	})
	metricCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_backend_commit_seconds",
		Help:    "Latency of one batch transaction (begin to commit).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	metricFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_orders_failed_total",
		Help: "Orders recorded failed or refused, by reason.",
	}, []string{"reason"})
	metricWriteErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_write_retries_total",
		Help: "Batch transactions that failed transiently (database unreachable, deadlock) and were retried.",
	})
	metricCompensations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_compensations_total",
		Help: "Units returned to Redis, by outcome (returned, already, error).",
	}, []string{"outcome"})
	metricLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_backend_order_lag_seconds",
		Help:    "Time from the gate's acceptance of an order to its commit in Postgres.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	metricOffers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_waitlist_total",
		Help: "Steps of the waitlist's units: offered, bought, passed (an offer's window ended unbought), returned (to the open pool, nobody left).",
	}, []string{"outcome"})
	metricReleased = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_unpaid_released_total",
		Help: "Orders cancelled by the sweeper because they were not paid in time.",
	})
)

// Collectors are the package's metrics, for the backend's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricConsumed, metricBatchSize, metricCommit, metricFailed, metricWriteErrors, metricCompensations, metricLag, metricReleased, metricOffers}
}

func init() {
	// Every outcome is exported from the start, at zero, so a rule over the first
	// dead-lettered message (an increase from nothing) sees it.
	for _, o := range []string{"created", "duplicate", "failed", "dead_lettered"} {
		metricConsumed.WithLabelValues(o)
	}
}
