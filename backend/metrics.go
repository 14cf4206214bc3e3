package backend

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/seckilledge/seckill/backend/draw"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/backend/webhook"
)

// Metrics of the backend, served on GET /metrics. Labels are bounded: a reason or an outcome
// from a fixed set, never a sale, order or user id.
var (
	metricReleased = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_backend_unpaid_released_total",
		Help: "Orders cancelled by the sweeper because they were not paid in time.",
	})
)

func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metricReleased)
	// The order writer's, reconcile's, the webhook worker's and rebalance's metrics are their own packages'.
	r.MustRegister(orders.Collectors()...)
	r.MustRegister(reconcile.Collectors()...)
	r.MustRegister(webhook.Collectors()...)
	r.MustRegister(sales.Collectors()...)
	r.MustRegister(draw.Collectors()...)
	return r
}

// NewMetricsRegistry is the backend's Prometheus registry, as GET /metrics serves it (the
// Grafana dashboard's test checks its metric names against it).
func NewMetricsRegistry() *prometheus.Registry { return newRegistry() }
