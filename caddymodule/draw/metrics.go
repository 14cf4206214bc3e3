package draw

import (
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
)

// The draw's collectors, package-level and registered into each config's registry by the kit,
// so counts survive reloads. Labelled by endpoint and outcome only: anyone can send any sale
// id.
var kitMetrics = roomkit.NewMetrics(metric.Subsystem("draw"), "outcome",
	"Requests of the draw by endpoint (enter, withdraw, status, challenge, page) and outcome (the state answered, or the refusal code).",
	"Requests of the draw")
