package draw

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// blockedUntil is the next_at of an event that waits for an earlier undelivered event of the
// same order id (backend/webhook/outbox.go's rule, whose worker releases it): a draw event's
// order id is "draw:<sale>:<user>", so one entrant hears won before expired.
const blockedUntil = `timestamptz '3000-01-01 00:00:00+00'`

// enqueueDraw records one draw event of type typ for each entry of variant with position in
// [lo, hi), in tx, in one INSERT ... SELECT (a million losers are one statement), under the
// outbox's rule: only when the sale has a webhook_url or the backend a default URL. wave and
// until are the event's wave and claim end (nil for draw.lost). unbought keeps only the entrants
// without a live order of the sale and not in skip (draw.expired: skip are the buyers whose
// order is still on its way to Postgres). Each event's id, the shop's idempotency key, is
// "<type>:<sale>:<entry id>:<wave>" ("-" for draw.lost): the same event is never recorded twice,
// even by a step that ran again. It returns the rows written.
func enqueueDraw(ctx context.Context, tx pgx.Tx, typ, sale, variant string, lo, hi int, wave *int, until *time.Time, unbought bool, skip []string, defaultURL bool) (int64, error) {
	if hi <= lo {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, url, next_at, entry_id, variant, wave, claim_until)
		SELECT $1 || ':' || e.sale_id || ':' || e.entry_id || ':' || coalesce($6::int::text, '-'), $1, 'draw:' || e.sale_id || ':' || e.user_id, e.sale_id, e.user_id, s.webhook_url,
			CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.order_id = 'draw:' || e.sale_id || ':' || e.user_id AND d.state <> 'delivered')
			THEN `+blockedUntil+` ELSE now() END,
			e.entry_id, e.variant, $6::int, $7::timestamptz
		FROM draw_entries e JOIN sales s ON s.id = e.sale_id
		WHERE e.sale_id = $2 AND e.variant = $3 AND e.pos >= $4 AND e.pos < $5 AND ($8 OR s.webhook_url IS NOT NULL)
			AND (NOT $9 OR (NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = e.sale_id AND o.user_id = e.user_id AND o.status IN ('created', 'paid'))
				AND NOT e.user_id = ANY(coalesce($10::text[], '{}'))))
		ORDER BY e.pos
		ON CONFLICT (id) DO NOTHING`, typ, sale, variant, lo, hi, wave, until, defaultURL, unbought, skip)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", typ, err)
	}
	metricEvents.WithLabelValues(typ).Add(float64(tag.RowsAffected()))
	return tag.RowsAffected(), nil
}

// advance runs draw_wave.lua on every variant of a drawn sale that is not done, and records
// in Postgres what Redis says (sync); when no variant is left, the draw is done. It returns
// whether the draw is done.
func (r *Runner) advance(ctx context.Context, sale string, held lock.Held) (bool, error) {
	rows, err := r.Pool.Query(ctx, `SELECT variant FROM draw_variants WHERE sale_id = $1 AND done_at IS NULL ORDER BY variant`, sale)
	if err != nil {
		return false, err
	}
	variants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, err
	}
	key := lock.SaleKey(sale)
	events := int64(0)
	raises, err := r.readRaises(ctx, sale)
	if err != nil {
		return false, err
	}
	for _, v := range variants {
		res, err := lua.DrawWaveCall{Sale: sale, Variant: v}.Run(ctx, r.Redis)
		if err != nil && strings.Contains(err.Error(), "not in Redis") {
			// The sale's keys are gone (never preheated, or expired long after its end):
			// nothing to advance; the loop must not fail on it every tick.
			return false, ErrNotPreheated
		}
		if err != nil {
			return false, fmt.Errorf("draw_wave.lua %s/%s: %w", sale, v, err)
		}
		if res.Action == lua.DrawWaveOpened {
			metricWaves.Inc()
		}
		inflight, err := r.inflight(ctx, sale, v, res)
		if err != nil {
			return false, err
		}
		err = lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
			n, err := r.sync(ctx, tx, sale, v, res, inflight, raises[v])
			events += n
			return err
		})
		if err != nil {
			return false, fmt.Errorf("draw %s/%s: waves: %w", sale, v, err)
		}
	}
	if events > 0 && r.Wake != nil {
		r.Wake()
	}
	var done bool
	err = lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE draws SET state = 'done' WHERE sale_id = $1 AND state = 'drawn'
			AND NOT EXISTS (SELECT 1 FROM draw_variants WHERE sale_id = $1 AND done_at IS NULL)`, sale)
		done = tag.RowsAffected() == 1
		return err
	})
	if done {
		r.log().Info("draw done", "sale_id", sale)
	}
	return done, err
}

// sync records one variant's waves as draw_wave.lua left them, in tx: the current wave's row
// and its draw.won events (once: the row's insert decides), the end of every earlier wave with
// the draw.expired events of its winners who did not buy, and, once the variant is done, the
// end of its last wave and a draw.lost event for every position never reached. It is driven by
// Redis's state, not by what this call did, so a sync lost to a crash is made by the next one.
//
// The waitlist's raises (compensate.lua's log) are recorded after the current wave's row and
// before any wave is ended, so an ended wave's draw.expired events reach the ranks a raise gave
// it, and its raised winners who did not buy are told unit.passed.
func (r *Runner) sync(ctx context.Context, tx pgx.Tx, sale, variant string, res lua.DrawWaveResult, inflight []string, raises []raise) (int64, error) {
	var events int64
	if res.Wave >= 1 {
		tag, err := tx.Exec(ctx, `INSERT INTO draw_waves (sale_id, variant, wave, lo, hi, at, claim_until) VALUES ($1, $2, $3, $4, $5, now(), $6)
			ON CONFLICT (sale_id, variant, wave) DO NOTHING`, sale, variant, res.Wave, res.Lo, res.Hi, res.ClaimUntil)
		if err != nil {
			return 0, err
		}
		if tag.RowsAffected() == 1 {
			wave, until := res.Wave, res.ClaimUntil
			n, err := enqueueDraw(ctx, tx, contract.EventDrawWon, sale, variant, res.Lo, res.Hi, &wave, &until, false, nil, r.DefaultWebhook)
			if err != nil {
				return 0, err
			}
			events += n
		}
	}
	n, err := r.recordRaises(ctx, tx, sale, variant, raises)
	if err != nil {
		return 0, err
	}
	events += n
	done := res.Action == lua.DrawWaveDone || res.Action == lua.DrawWaveWasDone
	// An idle variant (a waitlist draw's wave over with nothing unsold, waiting for a release)
	// ends its current wave too: its winners who did not buy have expired.
	endAll := done || res.Action == lua.DrawWaveIdle
	rows, err := tx.Query(ctx, `UPDATE draw_waves SET ended_at = now() WHERE sale_id = $1 AND variant = $2 AND ended_at IS NULL AND (wave < $3 OR $4)
		RETURNING wave, lo, hi, claim_until`, sale, variant, res.Wave, endAll)
	if err != nil {
		return 0, err
	}
	type ended struct {
		wave, lo, hi int
		until        time.Time
	}
	endedWaves, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ended, error) {
		var e ended
		return e, row.Scan(&e.wave, &e.lo, &e.hi, &e.until)
	})
	if err != nil {
		return 0, err
	}
	endedNums := make([]int, 0, len(endedWaves))
	for _, e := range endedWaves {
		n, err := enqueueDraw(ctx, tx, contract.EventDrawExpired, sale, variant, e.lo, e.hi, &e.wave, &e.until, true, inflight, r.DefaultWebhook)
		if err != nil {
			return 0, err
		}
		events += n
		endedNums = append(endedNums, e.wave)
	}
	if n, err = r.passRaises(ctx, tx, sale, variant, endedNums, inflight); err != nil {
		return 0, err
	}
	events += n
	if done {
		tag, err := tx.Exec(ctx, `UPDATE draw_variants SET done_at = now() WHERE sale_id = $1 AND variant = $2 AND done_at IS NULL`, sale, variant)
		if err != nil {
			return 0, err
		}
		if tag.RowsAffected() == 1 {
			n, err := enqueueDraw(ctx, tx, contract.EventDrawLost, sale, variant, res.Hi, math.MaxInt32, nil, nil, false, nil, r.DefaultWebhook)
			if err != nil {
				return 0, err
			}
			events += n
		}
	}
	return events, nil
}

// Tick is one pass of the draw loop: it runs the draw of every draw sale whose entries have
// closed by Redis TIME (or whose draw was stopped half-way), and advances the waves of every
// drawn sale. A sale whose lock another instance holds is skipped (its turn comes next tick);
// a sale that was never preheated is skipped (there is no seed to draw with). It returns how
// many sales it worked on.
func (r *Runner) Tick(ctx context.Context) (int, error) {
	now, err := r.Redis.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	rows, err := r.Pool.Query(ctx, `SELECT sale_id FROM draws WHERE (state = 'open' AND closes_at <= $1) OR state IN ('closed', 'drawn') ORDER BY closes_at`, now)
	if err != nil {
		return 0, err
	}
	sales, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	worked := 0
	var errs []error
	for _, sale := range sales {
		err := lock.With(ctx, r.Locker, lock.SaleKey(sale), 0, func(held lock.Held) error {
			state, err := r.state(ctx, sale)
			if err != nil {
				return err
			}
			switch state {
			case StateOpen, StateClosed:
				return r.runLocked(ctx, sale, held)
			case StateDrawn:
				_, err := r.advance(ctx, sale, held)
				return err
			}
			return nil
		})
		switch {
		case err == nil:
			worked++
		case errors.Is(err, lock.ErrBusy), errors.Is(err, ErrNotPreheated):
		case errors.Is(err, ErrBeaconPending):
			// Closed, waiting for its round: tried again next tick, shown by Status.
		default:
			metricErrors.Inc()
			errs = append(errs, fmt.Errorf("draw %s: %w", sale, err))
		}
	}
	return worked, errors.Join(errs...)
}

// RunLoop ticks every interval until ctx ends (the backend's draw loop, started by Run).
func (r *Runner) RunLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			if _, err := r.Tick(ctx); err != nil && ctx.Err() == nil {
				r.log().Warn("draw loop failed", "err", err)
			}
			metricTick.Observe(time.Since(start).Seconds())
		}
	}
}

// inflight are the winners of the waves that sync is about to end who have no order in
// Postgres yet but are buyers in Redis: the gate accepted their purchase before the window
// ended and the order is on its way (outbox, queue, writer). They bought; they must not hear
// that their win expired. Read before sync's transaction, in HMGET chunks of writeChunk users.
func (r *Runner) inflight(ctx context.Context, sale, variant string, res lua.DrawWaveResult) ([]string, error) {
	done := res.Action == lua.DrawWaveDone || res.Action == lua.DrawWaveWasDone || res.Action == lua.DrawWaveIdle
	rows, err := r.Pool.Query(ctx, `SELECT e.user_id FROM draw_waves w JOIN draw_entries e
			ON e.sale_id = w.sale_id AND e.variant = w.variant AND e.pos >= w.lo AND e.pos < w.hi
		WHERE w.sale_id = $1 AND w.variant = $2 AND w.ended_at IS NULL AND (w.wave < $3 OR $4)
			AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = e.sale_id AND o.user_id = e.user_id AND o.status IN ('created', 'paid'))`,
		sale, variant, res.Wave, done)
	if err != nil {
		return nil, err
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []string
	for len(users) > 0 {
		chunk := users[:min(len(users), writeChunk)]
		users = users[len(chunk):]
		vals, err := r.Redis.HMGet(ctx, contract.BuyersKey(sale), chunk...).Result()
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if v != nil {
				out = append(out, chunk[i])
			}
		}
	}
	return out, nil
}
