package draw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
)

// raise is one element of a draw's raises log (contract.DrawRaisesKey, written by
// compensate.lua): the released order raised wave's upper rank, giving position pos, with the
// wave's claim window then ending at until.
type raise struct {
	wave, pos      int
	until, at      time.Time
	variant, order string
}

// parseRaise reads "<wave>:<pos>:<claim_until_ms>:<now_ms>:<variant>:<order id>".
func parseRaise(s string) (raise, error) {
	p := strings.SplitN(s, ":", 6)
	if len(p) != 6 || p[5] == "" {
		return raise{}, fmt.Errorf("unreadable raise %q", s)
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(p[i], 10, 64)
		if err != nil || v < 0 {
			return raise{}, fmt.Errorf("unreadable raise %q", s)
		}
		n[i] = v
	}
	return raise{wave: int(n[0]), pos: int(n[1]), until: time.UnixMilli(n[2]), at: time.UnixMilli(n[3]), variant: p[4], order: p[5]}, nil
}

// readRaises reads a draw's raises log from Redis, by variant.
func (r *Runner) readRaises(ctx context.Context, sale string) (map[string][]raise, error) {
	lg, err := r.Redis.LRange(ctx, contract.DrawRaisesKey(sale), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("draw %s: raises: %w", sale, err)
	}
	out := map[string][]raise{}
	for _, s := range lg {
		x, err := parseRaise(s)
		if err != nil {
			r.log().Error("draw waitlist: skipping a raise", "sale_id", sale, "err", err)
			continue
		}
		out[x.variant] = append(out[x.variant], x)
	}
	return out, nil
}

// recordRaises records in tx the raises of one variant that Postgres does not hold yet: a
// draw_raises row each (one per released order: the primary key decides), the raised wave's
// upper rank and claim end, and the shop's events for the new winner, draw.won (as every
// winner's) and unit.offered (as the room's waitlist's). Idempotent: a raise recorded before is
// skipped, so a step lost to a crash is made by the next one.
func (r *Runner) recordRaises(ctx context.Context, tx pgx.Tx, sale, variant string, raises []raise) (int64, error) {
	var events int64
	for _, x := range raises {
		tag, err := tx.Exec(ctx, `INSERT INTO draw_raises (sale_id, order_id, variant, wave, pos, claim_until, at) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT DO NOTHING`, sale, x.order, variant, x.wave, x.pos, x.until, x.at)
		if err != nil {
			return 0, fmt.Errorf("record raise: %w", err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE draw_waves SET hi = greatest(hi, $4::int + 1), claim_until = greatest(claim_until, $5)
			WHERE sale_id = $1 AND variant = $2 AND wave = $3`, sale, variant, x.wave, x.pos, x.until); err != nil {
			return 0, fmt.Errorf("record raise: %w", err)
		}
		metricRaises.Inc()
		wave, until := x.wave, x.until
		n, err := enqueueDraw(ctx, tx, contract.EventDrawWon, sale, variant, x.pos, x.pos+1, &wave, &until, false, nil, r.DefaultWebhook)
		if err != nil {
			return 0, err
		}
		events += n
		var user string
		err = tx.QueryRow(ctx, `SELECT user_id FROM draw_entries WHERE sale_id = $1 AND variant = $2 AND pos = $3`, sale, variant, x.pos).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := webhook.EnqueueUnit(ctx, tx, sale, []webhook.UnitEvent{{Type: contract.EventUnitOffered, UserID: user, OfferUntil: until}}, r.DefaultWebhook); err != nil {
			return 0, err
		}
		events++
	}
	return events, nil
}

// passRaises records unit.passed for the winners a raise made in the waves just ended who did
// not buy (no live order of the sale, not among inflight: their purchase is on its way).
func (r *Runner) passRaises(ctx context.Context, tx pgx.Tx, sale, variant string, waves []int, inflight []string) (int64, error) {
	if len(waves) == 0 {
		return 0, nil
	}
	rows, err := tx.Query(ctx, `SELECT e.user_id, r.claim_until FROM draw_raises r
		JOIN draw_entries e ON e.sale_id = r.sale_id AND e.variant = r.variant AND e.pos = r.pos
		WHERE r.sale_id = $1 AND r.variant = $2 AND r.wave = ANY($3)
			AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = e.sale_id AND o.user_id = e.user_id AND o.status IN ('created', 'paid'))
			AND NOT e.user_id = ANY(coalesce($4::text[], '{}'))
		ORDER BY r.pos`, sale, variant, waves, inflight)
	if err != nil {
		return 0, err
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (webhook.UnitEvent, error) {
		e := webhook.UnitEvent{Type: contract.EventUnitPassed}
		return e, row.Scan(&e.UserID, &e.OfferUntil)
	})
	if err != nil || len(events) == 0 {
		return 0, err
	}
	return int64(len(events)), webhook.EnqueueUnit(ctx, tx, sale, events, r.DefaultWebhook)
}

// Released is told of a sale that got units back (orders.Compensator): on a drawn sale whose
// draw has the waitlist, it runs the sale's wave step now, so that a raise compensate.lua made is
// recorded, and its events sent, at once rather than at the draw loop's next tick; and a unit
// released after its wave ended opens the next wave now. The sale's lock is taken without
// waiting: when another step holds it, that one or the next tick records the raise.
func (r *Runner) Released(ctx context.Context, sale string) {
	var on bool
	err := r.Pool.QueryRow(ctx, `SELECT waitlist AND state = 'drawn' FROM draws WHERE sale_id = $1`, sale).Scan(&on)
	if err != nil || !on {
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			r.log().Warn("draw waitlist: step postponed to the draw loop", "sale_id", sale, "err", err)
		}
		return
	}
	err = lock.With(ctx, r.Locker, lock.SaleKey(sale), 0, func(held lock.Held) error {
		_, err := r.advance(ctx, sale, held)
		return err
	})
	if err != nil && !errors.Is(err, lock.ErrBusy) {
		r.log().Warn("draw waitlist: step postponed to the draw loop", "sale_id", sale, "err", err)
	}
}
