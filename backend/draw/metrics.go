package draw

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the draws. Labels are bounded: a step or an event type, never a sale or a user.
var (
	metricSteps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_draw_steps_total",
		Help: "Draw job steps completed: closed (entries fixed, root published), drawn (ranked, wave 1 open, seed revealed).",
	}, []string{"step"})
	metricWaves = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_draw_waves_opened_total",
		Help: "Waves opened (wave 1 of each variant and every later one).",
	})
	metricRaises = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_draw_raises_total",
		Help: "Waitlist raises recorded: a winner's released unit gave the next rank of its size a win at once.",
	})
	metricEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_draw_events_total",
		Help: "Draw webhook events written to the outbox, by type.",
	}, []string{"type"})
	metricErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_draw_errors_total",
		Help: "Draw loop passes that failed on a sale (retried next tick).",
	})
	metricBeacon = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_backend_draw_beacon_fetches_total",
		Help: "Beacon round fetches from one drand endpoint: fetched (the signature verified) or failed (down, late, or a round that does not verify).",
	}, []string{"outcome"})
	metricTick = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_backend_draw_tick_seconds",
		Help:    "Duration of a draw loop pass (a draw run in it included).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	})
)

// Collectors are the draws' metrics, for the backend's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricSteps, metricWaves, metricRaises, metricEvents, metricErrors, metricBeacon, metricTick}
}

func init() {
	// Both outcomes from the start, at zero: a rule that a draw waits for its beacon compares them.
	for _, o := range []string{"fetched", "failed"} {
		metricBeacon.WithLabelValues(o)
	}
}
