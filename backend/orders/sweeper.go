package orders

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
)

// ReasonPaymentTimeout is the reason of an order the sweeper cancelled.
const ReasonPaymentTimeout = "payment_timeout"

const sweepBatch = 500

// Sweeper cancels the orders not paid in time and gives their units back (SweepOnce), one
// instance at a time under its distributed lock.
type Sweeper struct {
	Pool        *pgxpool.Pool
	Locker      lock.Locker
	Compensator *Compensator
	Log         *slog.Logger
	// Webhooks delivers the order.cancelled events (nil: no delivery).
	Webhooks *webhook.Worker
	// Lock is the key of the sweeper's distributed lock (default lock.SweeperKey): instances
	// that share it sweep one at a time.
	Lock string
}

// SweepOnce cancels created orders not paid within their sale's pay_within, returns their
// units (their quantity, to their variant too) to Postgres stock (same transaction) and to Redis (compensation), then retries pending
// compensations. Only the holder of the sweeper lock sweeps; its fencing token is checked in
// each transaction, so a sweeper that lost its lock (paused, partitioned) cannot write after a
// newer one. Rows are taken FOR UPDATE SKIP LOCKED, so a payment in progress is never waited
// for (it wins or the next sweep sees it). It returns how many orders it cancelled.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	released := 0
	key := s.Lock
	if key == "" {
		key = lock.SweeperKey
	}
	err := lock.With(ctx, s.Locker, key, 0, func(held lock.Held) error {
		for {
			var refs []OrderRef
			err := lock.Fenced(ctx, s.Pool, key, held, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, `SELECT o.order_id, o.sale_id, o.user_id, o.variant_id, o.quantity FROM orders o JOIN sales s ON s.id = o.sale_id
					WHERE o.status = 'created' AND o.created_at + s.pay_within <= now()
					ORDER BY o.created_at LIMIT $1 FOR UPDATE OF o SKIP LOCKED`, sweepBatch)
				if err != nil {
					return err
				}
				refs, err = pgx.CollectRows(rows, ScanOrderRef)
				if err != nil || len(refs) == 0 {
					return err
				}
				ids := make([]string, len(refs))
				for i, r := range refs {
					ids[i] = r.OrderID
				}
				if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'cancelled', reason = $2, updated_at = now() WHERE order_id = ANY($1)`,
					ids, ReasonPaymentTimeout); err != nil {
					return err
				}
				// Units, not orders: an order holds its quantity, of its variant. The sales'
				// rows first, then their variants', the order the writer locks them in.
				if _, err = tx.Exec(ctx, `UPDATE sales SET stock = sales.stock + x.n
					FROM (SELECT sale_id, sum(quantity)::int AS n FROM orders WHERE order_id = ANY($1) GROUP BY sale_id) x
					WHERE sales.id = x.sale_id`, ids); err != nil {
					return err
				}
				if _, err = tx.Exec(ctx, `UPDATE sale_variants sv SET stock = sv.stock + x.n
					FROM (SELECT sale_id, variant_id, sum(quantity)::int AS n FROM orders
						WHERE order_id = ANY($1) AND variant_id <> '' GROUP BY sale_id, variant_id) x
					WHERE sv.sale_id = x.sale_id AND sv.variant_id = x.variant_id`, ids); err != nil {
					return err
				}
				return webhook.Enqueue(ctx, tx, contract.EventOrderCancelled, ids, s.Webhooks.HasDefaultURL())
			})
			if err != nil {
				return err
			}
			released += len(refs)
			metricReleased.Add(float64(len(refs)))
			if len(refs) > 0 {
				s.Log.Info("unpaid orders released", "orders", len(refs))
				s.Webhooks.Wake()
				s.Compensator.Compensate(ctx, refs)
			}
			if len(refs) < sweepBatch {
				break
			}
		}
		_, err := s.Compensator.RetryPending(ctx, sweepBatch)
		return err
	})
	if w := s.Compensator.Waitlist; w != nil && ctx.Err() == nil {
		// Outside the lock: the step is idempotent, and an offer's window ends on time even
		// while another instance sweeps.
		if werr := w.StepAll(ctx); werr != nil {
			s.Log.Warn("waitlist step failed", "err", werr)
		}
	}
	if errors.Is(err, lock.ErrBusy) {
		return 0, nil
	}
	return released, err
}

// Run sweeps every interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.SweepOnce(ctx); err != nil && ctx.Err() == nil {
				s.Log.Warn("sweep failed", "err", err)
			}
		}
	}
}
