package caddymodule

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
)

// The app's metrics: package-level, registered into each config's registry (metric.Register).
var (
	redisConnsOpened = metric.Subsystem("redis").Counter("connections_opened_total",
		"Connections opened by the shared Redis client. A config reload must not raise it.")
	brokerUp = metric.Subsystem("amqp").Gauge("connected", "1 while the shared RabbitMQ connection is open.")
	redisUp  = metric.Subsystem("redis").GaugeVec("up",
		"1 when Redis answered the last check, 0 when it did not, by check (readiness: seckill_ready's); absent until one ran.", "check")
)

// registerMetrics registers collectors into reg, ignoring those already there.
func registerMetrics(reg prometheus.Registerer) {
	metric.Register(reg, redisConnsOpened, brokerUp, redisUp)
}
