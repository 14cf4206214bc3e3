// Package metric declares the collectors of the seckill app and handlers one way: every name
// is seckill_<subsystem>_<name>, every collector is package-level and registered into each
// config's registry with Register, so counters keep counting across config reloads instead of
// starting again at zero.
package metric

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Subsystem is the middle part of a collector's name: gate, token, throttle, room, relay...
type Subsystem string

func (s Subsystem) opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "seckill", Subsystem: string(s), Name: name, Help: help}
}

// Counter is seckill_<s>_<name>.
func (s Subsystem) Counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts(s.opts(name, help)))
}

// CounterVec is seckill_<s>_<name> with labels.
func (s Subsystem) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts(s.opts(name, help)), labels)
}

// Gauge is seckill_<s>_<name>.
func (s Subsystem) Gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts(s.opts(name, help)))
}

// GaugeVec is seckill_<s>_<name> with labels.
func (s Subsystem) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts(s.opts(name, help)), labels)
}

func (s Subsystem) histogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Namespace: "seckill", Subsystem: string(s), Name: name, Help: help, Buckets: buckets}
}

// Histogram is seckill_<s>_<name> with the given buckets.
func (s Subsystem) Histogram(name, help string, buckets ...float64) prometheus.Histogram {
	return prometheus.NewHistogram(s.histogramOpts(name, help, buckets))
}

// HistogramVec is seckill_<s>_<name> with the given buckets and labels.
func (s Subsystem) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(s.histogramOpts(name, help, buckets), labels)
}

// Register registers collectors into reg, ignoring those already registered (a reload
// registers the same package-level collectors into the new config's registry).
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
