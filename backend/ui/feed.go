package ui

import (
	"context"
	"errors"
	"strconv"
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
	// LaneMode and Lanes: a room sale's lanes in their order (docs/room.md, "Lanes"), read
	// from the room hash each frame; absent for a sale without lanes.
	LaneMode string      `json:"lane_mode,omitempty"`
	Lanes    []LaneFrame `json:"lanes,omitempty"`
}

// LaneFrame is one lane of a room sale in a frame.
type LaneFrame struct {
	Name string `json:"name"`
	// Kind: claim, invitation or public; Claim the claim value of a claim lane.
	Kind  string `json:"kind"`
	Claim string `json:"claim,omitempty"`
	// Share: the lane's part of the admission rate (mode share; 0 in mode priority, where the
	// lane's place in the list is its priority).
	Share float64 `json:"share"`
	// Entries and Admitted: the lane's counters (room hash lane:<name>:entries, :admitted).
	Entries  int64 `json:"entries"`
	Admitted int64 `json:"admitted"`
	// Waiting: the lane's backlog as the admission step counts it: its places past its cursor,
	// plus its passed waiters who came back (room_queue.lua). Passed waiters still away are
	// not counted.
	Waiting int64 `json:"waiting"`
	// The invitation lane's codes: issued (the codes hash), and used at least once (the uses
	// hash). Each entry into the lane spent one use, so Entries is the uses spent.
	CodesIssued *int64 `json:"codes_issued,omitempty"`
	CodesUsed   *int64 `json:"codes_used,omitempty"`
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
	laneFields := make([]*redis.SliceCmd, len(shown))
	for i, s := range shown {
		for _, id := range contract.ShardIDs(s.ID, s.Shards) {
			xlens[i] = append(xlens[i], pipe.XLen(ctx, contract.OutboxKey(id)))
		}
		// HMGET rather than HGET: a sale without a room has no field, which is no error.
		laneFields[i] = pipe.HMGet(ctx, contract.RoomKey(s.ID), "lanes")
	}
	if len(shown) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fr, err
		}
	}
	lanes, err := readLanes(ctx, f.c.Redis, shown, laneFields)
	if err != nil {
		return fr, err
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
		if l, ok := lanes[s.ID]; ok {
			sf.LaneMode, sf.Lanes = l.mode, l.lanes
		}
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

// saleLanes is one sale's lanes as a frame shows them.
type saleLanes struct {
	mode  string
	lanes []LaneFrame
}

// readLanes reads the lanes of the sales whose room hash has a lanes field (fields[i] is
// shown[i]'s HMGET of it), in one pipeline: each lane's counters and cursor from the room
// hash, its queue's and back set's sizes, and the invitation codes issued and used (the keys
// of contract: docs/room.md, "Lanes").
func readLanes(ctx context.Context, rdb redis.UniversalClient, shown []admin.SaleSummary, fields []*redis.SliceCmd) (map[string]saleLanes, error) {
	type pending struct {
		sale      string
		mode      string
		specs     []admin.LaneSpec
		counters  *redis.SliceCmd
		queue     []*redis.IntCmd
		back      []*redis.IntCmd
		codes     *redis.IntCmd
		codesUsed *redis.IntCmd
	}
	var todo []*pending
	pipe := rdb.Pipeline()
	for i, s := range shown {
		var field string
		if v := fields[i].Val(); len(v) == 1 {
			field, _ = v[0].(string)
		}
		mode, specs, ok := admin.ParseLanesField(field)
		if !ok {
			continue
		}
		p := &pending{sale: s.ID, mode: mode, specs: specs}
		var names []string
		for _, l := range specs {
			cursor := "lane:" + l.Name + ":cursor"
			q, back := contract.RoomLaneQueueKey(s.ID, l.Name), contract.RoomLaneQueueKey(s.ID, l.Name)+":back"
			if l.Kind == admin.LanePublic {
				cursor, q, back = "cursor", contract.RoomQueueKey(s.ID), contract.RoomBackKey(s.ID)
			}
			names = append(names, "lane:"+l.Name+":entries", "lane:"+l.Name+":admitted", cursor)
			p.queue = append(p.queue, pipe.ZCard(ctx, q))
			p.back = append(p.back, pipe.ZCard(ctx, back))
			if l.Kind == admin.LaneInvitation {
				p.codes = pipe.HLen(ctx, contract.RoomCodesKey(s.ID))
				p.codesUsed = pipe.HLen(ctx, contract.RoomCodesUsedKey(s.ID))
			}
		}
		p.counters = pipe.HMGet(ctx, contract.RoomKey(s.ID), names...)
		todo = append(todo, p)
	}
	out := map[string]saleLanes{}
	if len(todo) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for _, p := range todo {
		counters := p.counters.Val()
		num := func(i int) int64 {
			s, _ := counters[i].(string)
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}
		sl := saleLanes{mode: p.mode}
		for i, l := range p.specs {
			lf := LaneFrame{Name: l.Name, Kind: l.Kind, Claim: l.Claim, Share: l.Share,
				Entries: num(3 * i), Admitted: num(3*i + 1),
				Waiting: max(p.queue[i].Val()-num(3*i+2), 0) + p.back[i].Val()}
			if l.Kind == admin.LaneInvitation {
				issued, used := p.codes.Val(), p.codesUsed.Val()
				lf.CodesIssued, lf.CodesUsed = &issued, &used
			}
			sl.lanes = append(sl.lanes, lf)
		}
		out[p.sale] = sl
	}
	return out, nil
}
