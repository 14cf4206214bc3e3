package reconcile

import "github.com/prometheus/client_golang/prometheus"

// metricReconciled counts reconcile's repairs (a stable name: dashboards and alerts use it). The
// backend registers it through Collectors.
var metricReconciled = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "seckill_backend_reconcile_repairs_total",
	Help: "Repairs made by reconcile, by kind.",
}, []string{"kind"})

// Collectors are the package's metrics, for the backend's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricReconciled} }
