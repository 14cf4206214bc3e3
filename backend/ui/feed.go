package ui

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// CockpitFrame is one second of the live page (one Server-Sent Event).
type CockpitFrame struct {
	At    time.Time   `json:"at"`
	Sales []SaleFrame `json:"sales"`
	// Queue: RabbitMQ's winners queue and dead-letter queue (management API).
	Queue QueueDepths `json:"queue"`
	// ConsumedPerSec: order messages this backend took from RabbitMQ per second.
	ConsumedPerSec float64 `json:"consumed_per_sec"`
	// LagMS: mean time from the gate's 202 to the order's row in Postgres, over the orders
	// this backend wrote since the previous frame (0 when none).
	LagMS float64 `json:"lag_ms"`
	// Gateways: whether accepted/refused rates come from the gateways' metrics ("metrics") or
	// are derived from Redis ("derived"); GatewaysDown lists unreachable ones.
	Gateways     string             `json:"gateways"`
	GatewaysDown []string           `json:"gateways_down,omitempty"`
	Audit        []admin.AuditEntry `json:"audit"`
}

// SaleFrame is one sale in a frame.
type SaleFrame struct {
	admin.SaleSummary
	Orders map[string]int `json:"orders"`
	// Queued: buyers in Redis without a live order in Postgres yet (approximate: buyers minus
	// created and paid orders).
	Queued int64 `json:"queued"`
	// Outbox: entries in the sale's outbox streams not yet relayed to RabbitMQ (XLEN).
	Outbox int64 `json:"outbox"`
	// AcceptedPerSec and RefusedPerSec (by refusal code) since the previous frame.
	AcceptedPerSec float64            `json:"accepted_per_sec"`
	RefusedPerSec  map[string]float64 `json:"refused_per_sec"`
	// Draw: the sale is a draw (docs/draw.md); the page then shows its draw panel, which it
	// reads from GET /admin/sales/{id}/draw on its own, less often than once a frame.
	Draw bool `json:"draw,omitempty"`
}

// feed builds frames for one page; it keeps the previous counters to turn them into rates.
type feed struct {
	c       *Cockpit
	src     *cockpitSources
	prevAt  time.Time
	prevBk  backendCounters
	prevGw  map[string]map[string]float64
	prevBuy map[string]int64
}

// cockpitSaleCap bounds the sales a frame shows: the newest first.
const cockpitSaleCap = 20

func (f *feed) frame(ctx context.Context) (CockpitFrame, error) {
	now := f.c.Now()
	fr := CockpitFrame{At: now, Sales: []SaleFrame{}, Gateways: "derived"}
	// The live and recent sales: those ended over an hour ago are history.
	shown, err := f.c.Sales(ctx, now.Add(-time.Hour), cockpitSaleCap)
	if err != nil {
		return fr, err
	}
	ids := make([]string, len(shown))
	for i, s := range shown {
		ids[i] = s.ID
	}
	orders := map[string]map[string]int{}
	rows, err := f.c.Pool.Query(ctx, `SELECT sale_id, status, count(*) FROM orders WHERE sale_id = ANY($1) GROUP BY 1, 2`, ids)
	if err != nil {
		return fr, err
	}
	for rows.Next() {
		var sale, status string
		var n int
		if err := rows.Scan(&sale, &status, &n); err != nil {
			rows.Close()
			return fr, err
		}
		if orders[sale] == nil {
			orders[sale] = map[string]int{}
		}
		orders[sale][status] = n
	}
	if err := rows.Err(); err != nil {
		return fr, err
	}
	draws, err := drawSales(ctx, f, ids)
	if err != nil {
		return fr, err
	}
	pipe := f.c.Redis.Pipeline()
	xlens := make([][]*redis.IntCmd, len(shown))
	for i, s := range shown {
		for _, id := range contract.ShardIDs(s.ID, s.Shards) {
			xlens[i] = append(xlens[i], pipe.XLen(ctx, contract.OutboxKey(id)))
		}
	}
	if len(shown) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fr, err
		}
	}
	gw, down, fromGateways := f.src.gateCounts(ctx)
	if fromGateways {
		fr.Gateways, fr.GatewaysDown = "metrics", down
	}
	dt := now.Sub(f.prevAt).Seconds()
	first := f.prevAt.IsZero() || dt <= 0
	buyers := map[string]int64{}
	for i, s := range shown {
		sf := SaleFrame{SaleSummary: s, Orders: map[string]int{"created": 0, "paid": 0, "cancelled": 0, "failed": 0}, RefusedPerSec: map[string]float64{}}
		for k, v := range orders[s.ID] {
			sf.Orders[k] = v
		}
		sf.Queued = max(0, s.Buyers-int64(sf.Orders["created"]+sf.Orders["paid"]))
		for _, c := range xlens[i] {
			sf.Outbox += c.Val()
		}
		buyers[s.ID] = s.Buyers
		sf.Draw = draws[s.ID]
		if !first {
			if fromGateways {
				for outcome, n := range sumShards(gw, s.ID) {
					rate := max(0, n-sumShards(f.prevGw, s.ID)[outcome]) / dt
					if outcome == "accepted" {
						sf.AcceptedPerSec = rate
					} else if rate > 0 {
						sf.RefusedPerSec[outcome] = rate
					}
				}
			} else if prev, ok := f.prevBuy[s.ID]; ok {
				sf.AcceptedPerSec = float64(max(0, s.Buyers-prev)) / dt
			}
		}
		fr.Sales = append(fr.Sales, sf)
	}
	bk := f.src.backend()
	if !first {
		fr.ConsumedPerSec = max(0, bk.consumed-f.prevBk.consumed) / dt
		if n := bk.lagCount - f.prevBk.lagCount; n > 0 {
			fr.LagMS = (bk.lagSum - f.prevBk.lagSum) / n * 1000
		}
	}
	fr.Queue = f.src.queues(ctx)
	if fr.Audit, err = f.c.Audit(ctx, 20); err != nil {
		return fr, err
	}
	f.prevAt, f.prevBk, f.prevGw, f.prevBuy = now, bk, gw, buyers
	return fr, nil
}

// sumShards adds up a sale's counters over its own label and its shards' ("<sale>:<i>").
func sumShards(counts map[string]map[string]float64, sale string) map[string]float64 {
	out := map[string]float64{}
	for label, byOutcome := range counts {
		if contract.BaseSale(label) != sale {
			continue
		}
		for o, n := range byOutcome {
			out[o] += n
		}
	}
	return out
}

// drawSales says which of the sales are draws (a draws row, 009_draws.sql).
func drawSales(ctx context.Context, f *feed, ids []string) (map[string]bool, error) {
	rows, err := f.c.Pool.Query(ctx, `SELECT sale_id FROM draws WHERE sale_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error { out[id] = true; return nil })
	return out, err
}
