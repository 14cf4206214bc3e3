package draw

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
)

// Package-level collectors registered into each config's registry, so counts survive reloads.
// Labelled by endpoint and outcome only: anyone can send any sale id.
var (
	kitMetrics = roomkit.NewMetrics(drawMetric, "outcome",
		"Requests of the draw by endpoint (enter, withdraw, status, challenge, page) and outcome (the state answered, or the refusal code).",
		"Requests of the draw")
	requests, challenges, shed = kitMetrics.Requests, kitMetrics.Challenges, kitMetrics.Shed
)

const drawMetric = metric.Subsystem("draw")

func registerMetrics(reg prometheus.Registerer) {
	metric.Register(reg, requests, challenges, shed)
}
