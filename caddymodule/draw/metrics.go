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

// flagged counts the flagged entries by sale and reason: a sale label only for sales that are
// draws (the entry found the draw before the flag is counted).
var flagged = metric.Subsystem("draw").CounterVec("flagged_total",
	"Draw entries flagged, by sale and reason (challenge: the bot challenge's verdict; rule: a flag matcher): "+
		"entered like any other, left out of the entries the close fixes (entering again counts again).", "sale", "reason")
