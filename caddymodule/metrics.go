package caddymodule

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The app's metrics are package-level collectors registered into each config's registry, so
// counters keep counting across config reloads instead of starting again at zero.
var (
	redisConnsOpened = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "seckill", Subsystem: "redis", Name: "connections_opened_total",
		Help: "Connections opened by the shared Redis client. A config reload must not raise it.",
	})
	brokerUp = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "seckill", Subsystem: "amqp", Name: "connected",
		Help: "1 while the shared RabbitMQ connection is open.",
	})
)

// registerMetrics registers collectors into reg, ignoring those already there.
func registerMetrics(reg prometheus.Registerer) {
	Register(reg, redisConnsOpened, brokerUp)
}

// Register registers collectors into reg, ignoring those already registered. Handlers use it
// for their own package-level collectors.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) {
	if reg == nil {
		return
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
