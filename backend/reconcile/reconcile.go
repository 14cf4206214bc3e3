package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/lua"
)

// Reconciler repairs a sale's Redis state from Postgres (the source of truth). It is given the
// stores, the lock and the few things of the rest of the backend it uses; the backend builds
// one, once (backend.New).
type Reconciler struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger
	// Now is the clock.
	Now func() time.Time
	// Grace is how long a buyer without an order is left alone (its message may be in the
	// outbox or the queue) before the order is declared lost; 0 is a minute.
	Grace time.Duration
	// Locker takes the sale's lock (lock.SaleKey): reconcile runs under it, and every
	// Postgres write it makes is fenced with it.
	Locker lock.Locker
	// Compensator returns the units of the orders reconcile records failed.
	Compensator *orders.Compensator
	// Webhooks says whether every sale's events are recorded (a lost order's order.failed).
	Webhooks *webhook.Worker
	// Shards is the backend's cache of shard counts.
	Shards *shards.Counts
	// Rebalance evens out a sharded sale's shards (k of them) after the repair, under the lock
	// reconcile holds, and adds what it did to rep.
	Rebalance func(ctx context.Context, sale string, k int, rep *admin.ReconcileReport) error
}

// ErrUnknownSale is returned for a sale Postgres does not know.
var ErrUnknownSale = errors.New("unknown sale")

// ReasonLost is the failure reason reconcile gives an order the gate accepted (a buyer in
// Redis) whose message never reached Postgres within the grace period.
const ReasonLost = "lost_in_transit"

// Reconcile compares a sale's Redis state with Postgres and repairs Redis, under the sale's
// lock with its fencing token checked on every Postgres write.
//
//  1. Buyers in Redis with no order in Postgres after the grace period (their acceptance time is
//     inside the UUIDv7 order id) are recorded failed (lost_in_transit) and compensated; a
//     late message for them then changes nothing (ON CONFLICT DO NOTHING).
//  2. Failed or cancelled orders whose compensation is pending are compensated.
//  3. From a Postgres snapshot (taken first) and an atomic Redis snapshot (taken second), the
//     Redis stock should be: Postgres stock - buyers in flight - buyers of failed/cancelled
//     orders not compensated yet. The difference is applied as a delta (reconcile.lua), so
//     purchases accepted meanwhile are kept. Buyers of created/paid orders missing from Redis
//     are restored.
//  4. The waitlist's reserve (meta "reserved", a room sale with a waitlist) is clamped to what
//     the waitlist's log says it holds and to the repaired stock (reserved_clamp.lua).
func (rc *Reconciler) Reconcile(ctx context.Context, sale string) (admin.ReconcileReport, error) {
	rep := admin.ReconcileReport{SaleID: sale, LostFailed: []string{}, BuyersRestored: []string{}, Actions: []string{}}
	key := lock.SaleKey(sale)
	err := lock.With(ctx, rc.Locker, lock.SaleKey(sale), 5*time.Second, func(held lock.Held) error {
		var exists bool
		if err := rc.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sales WHERE id = $1)`, sale).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return ErrUnknownSale
		}
		if n, err := rc.Redis.Exists(ctx, contract.MetaKey(sale)).Result(); err != nil {
			return err
		} else if n == 0 {
			rep.Actions = append(rep.Actions, "the sale is not in Redis: preheat it")
			return nil
		}
		if unit, err := rc.unitSale(ctx, sale); err != nil {
			return err
		} else if unit {
			return rc.reconcileUnits(ctx, sale, key, held, &rep) // units.go
		}
		// A sharded sale is reconciled as the sum of its shards (ids; the sale itself when
		// unsharded). Units a rebalance left journaled between two shards are delivered
		// first, so that the shards' stocks hold every unit.
		k, ids, err := rc.reconcileShardIDs(ctx, sale, &rep)
		if err != nil {
			return err
		}

		// 1. Lost buyers.
		buyers, err := shards.Buyers(ctx, rc.Redis, ids)
		if err != nil {
			return err
		}
		known, err := rc.ordersByID(ctx, buyers)
		if err != nil {
			return err
		}
		cutoff := rc.Now().Add(-rc.grace())
		var lost []Lost
		for user, oid := range buyers {
			if _, ok := known[oid]; ok {
				continue
			}
			if at, ok := AcceptedAt(oid); ok && at.After(cutoff) {
				continue
			}
			// A sale without units: one unit, the user's first purchase, no variant.
			lost = append(lost, Lost{User: user, Order: oid, Units: 1, Seq: 1})
		}
		if len(lost) > 0 {
			inserted, err := rc.recordLost(ctx, sale, key, held, lost, &rep)
			if err != nil {
				return err
			}
			if len(inserted) > 0 {
				rep.Actions = append(rep.Actions, fmt.Sprintf("%d buyers had no order after %s: recorded failed (%s) and their units returned", len(inserted), rc.grace(), ReasonLost))
			}
		}

		// 2. Pending compensations of this sale.
		if err := rc.compensatePending(ctx, sale, &rep, "a unit"); err != nil {
			return err
		}

		// 3. Snapshots, Postgres first.
		type row struct{ user, status string }
		var pgStock int
		pgOrders := map[string]row{}
		err = pgx.BeginTxFunc(ctx, rc.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1`, sale).Scan(&pgStock); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `SELECT order_id, user_id, status FROM orders WHERE sale_id = $1`, sale)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				var r row
				if err := rows.Scan(&id, &r.user, &r.status); err != nil {
					rows.Close()
					return err
				}
				pgOrders[id] = r
			}
			return rows.Err()
		})
		if err != nil {
			return err
		}
		// One atomic snapshot per shard: a purchase touches one shard only, so the sum of the
		// shards' snapshots counts every purchase exactly once.
		stocks := make([]int64, len(ids))
		buyers = map[string]string{}
		var redisStock int64
		for i, id := range ids {
			var stockCmd *redis.StringCmd
			var buyersCmd *redis.MapStringStringCmd
			if _, err := rc.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
				stockCmd = p.HGet(ctx, contract.MetaKey(id), contract.FieldStock)
				buyersCmd = p.HGetAll(ctx, contract.BuyersKey(id))
				return nil
			}); err != nil {
				return err
			}
			n, err := strconv.ParseInt(stockCmd.Val(), 10, 64)
			if err != nil {
				return fmt.Errorf("redis stock of %s %q: %w", id, stockCmd.Val(), err)
			}
			stocks[i] = n
			redisStock += n
			for u, o := range buyersCmd.Val() {
				buyers[u] = o
			}
		}
		inFlight, unreturned := 0, 0
		for _, oid := range buyers {
			r, ok := pgOrders[oid]
			switch {
			case !ok:
				inFlight++
			case r.status == contract.StatusFailed || r.status == contract.StatusCancelled:
				unreturned++ // compensation in progress: Redis will get it back
			}
		}
		var restore []any
		for oid, r := range pgOrders {
			if (r.status == contract.StatusCreated || r.status == contract.StatusPaid) && buyers[r.user] == "" {
				restore = append(restore, r.user, oid)
				rep.BuyersRestored = append(rep.BuyersRestored, r.user)
			}
		}
		target := int64(pgStock - inFlight - unreturned)
		rep.StockDB, rep.InFlight, rep.StockRedisBefore = pgStock, inFlight, redisStock
		rep.StockDelta = target - redisStock
		if rep.StockDelta == 0 && len(restore) == 0 {
			rep.StockRedisAfter = redisStock
			if err := rc.clampReserved(ctx, sale, key, held, &rep); err != nil {
				return err
			}
			return rc.Rebalance(ctx, sale, k, &rep)
		}
		// Postgres is not written here, but the fence still orders this repair after any newer
		// holder's: refuse to touch Redis if one exists.
		if err := lock.Fenced(ctx, rc.Pool, key, held, func(pgx.Tx) error { return nil }); err != nil {
			return err
		}
		if k > 1 {
			rep.StockRedisAfter, err = reconcileShards(ctx, rc.Redis, sale, k, stocks, rep.StockDelta, restore)
			if err != nil {
				return err
			}
		} else {
			rep.StockRedisAfter, _, _, err = lua.ReconcileCall{Sale: sale, Delta: rep.StockDelta, Pairs: restore}.Run(ctx, rc.Redis)
			if err != nil {
				return fmt.Errorf("reconcile.lua: %w", err)
			}
		}
		if rep.StockDelta != 0 {
			metricReconciled.WithLabelValues("stock").Inc()
			rep.Actions = append(rep.Actions, fmt.Sprintf("Redis stock was %d, Postgres says %d with %d in flight: adjusted by %+d",
				redisStock, pgStock, inFlight+unreturned, rep.StockDelta))
		}
		if len(restore) > 0 {
			metricReconciled.WithLabelValues("buyer").Add(float64(len(rep.BuyersRestored)))
			rep.Actions = append(rep.Actions, fmt.Sprintf("%d buyers with an order in Postgres were missing from Redis: restored", len(rep.BuyersRestored)))
		}
		// 4. The waitlist's reserve, against the repaired stock.
		if err := rc.clampReserved(ctx, sale, key, held, &rep); err != nil {
			return err
		}
		return rc.Rebalance(ctx, sale, k, &rep)
	})
	if err == nil {
		rc.Log.Info("sale reconciled", "sale_id", sale, "actions", rep.Actions)
	}
	return rep, err
}

// reconcileShardIDs returns a sale's shard count and the ids reconcile sums over (the sale
// itself when unsharded), after delivering the units a rebalance left journaled between two
// shards, so that the shards' stocks (and variants) hold every unit.
func (rc *Reconciler) reconcileShardIDs(ctx context.Context, sale string, rep *admin.ReconcileReport) (int, []string, error) {
	k, err := rc.Shards.Of(ctx, rc.Pool, sale)
	if err != nil {
		return 0, nil, err
	}
	ids := contract.ShardIDs(sale, k)
	if k > 1 {
		n, err := shards.FinishMoves(ctx, rc.Redis, ids)
		if err != nil {
			return 0, nil, err
		}
		if n > 0 {
			rep.Actions = append(rep.Actions, fmt.Sprintf("%d interrupted moves between shards: completed", n))
		}
	}
	return k, ids, nil
}

func (rc *Reconciler) grace() time.Duration {
	if rc.Grace > 0 {
		return rc.Grace
	}
	return time.Minute
}

func (rc *Reconciler) ordersByID(ctx context.Context, buyers map[string]string) (map[string]string, error) {
	ids := make([]string, 0, len(buyers))
	for _, o := range buyers {
		ids = append(ids, o)
	}
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := rc.Pool.Query(ctx, `SELECT order_id, status FROM orders WHERE order_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

// recordLost records each lost order failed (lost_in_transit), under the sale's fence, with its
// units and the user's purchase number and no variant (reconcile cannot know it: see
// units.go), enqueues its order.failed event, and compensates the ones it inserted: a
// late message for them then changes nothing (ON CONFLICT DO NOTHING). It reports them in rep's
// LostFailed and returns them; the caller says in words what was repaired. Both reconciles (a
// sale's buyers, a sale's units) record their lost orders here.
func (rc *Reconciler) recordLost(ctx context.Context, sale, key string, held lock.Held, lost []Lost, rep *admin.ReconcileReport) ([]orders.OrderRef, error) {
	var inserted []orders.OrderRef
	err := lock.Fenced(ctx, rc.Pool, key, held, func(tx pgx.Tx) error {
		inserted = inserted[:0]
		for _, l := range lost {
			at, ok := AcceptedAt(l.Order)
			if !ok {
				at = rc.Now()
			}
			tag, err := tx.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at, variant_id, quantity, seq)
				VALUES ($1, $2, $3, 'failed', $4, $5, '', $6, $7) ON CONFLICT DO NOTHING`, l.Order, sale, l.User, ReasonLost, at, l.Units, l.Seq)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				inserted = append(inserted, orders.OrderRef{OrderID: l.Order, SaleID: sale, UserID: l.User, Quantity: l.Units})
			}
		}
		ids := make([]string, len(inserted))
		for i, l := range inserted {
			ids[i] = l.OrderID
		}
		return webhook.Enqueue(ctx, tx, contract.EventOrderFailed, ids, rc.Webhooks.HasDefaultURL())
	})
	if err != nil {
		return nil, err
	}
	rc.Compensator.Compensate(ctx, inserted)
	for _, l := range inserted {
		rep.LostFailed = append(rep.LostFailed, l.OrderID)
	}
	if len(inserted) > 0 {
		metricReconciled.WithLabelValues("lost").Add(float64(len(inserted)))
	}
	return inserted, nil
}

// compensatePending returns to Redis what the sale's failed or cancelled orders still hold
// there (their compensation did not run, or did not finish) and reports it; what says what
// each held ("a unit", "units").
func (rc *Reconciler) compensatePending(ctx context.Context, sale string, rep *admin.ReconcileReport, what string) error {
	pending, err := rc.pendingCompensations(ctx, sale)
	if err != nil || len(pending) == 0 {
		return err
	}
	rep.Compensated = rc.Compensator.Compensate(ctx, pending)
	metricReconciled.WithLabelValues("compensated").Add(float64(rep.Compensated))
	rep.Actions = append(rep.Actions, fmt.Sprintf("%d failed or cancelled orders still held %s in Redis: returned", rep.Compensated, what))
	return nil
}

func (rc *Reconciler) pendingCompensations(ctx context.Context, sale string) ([]orders.OrderRef, error) {
	rows, err := rc.Pool.Query(ctx, `SELECT `+orders.OrderRefColumns+` FROM orders
		WHERE sale_id = $1 AND status IN ('failed', 'cancelled') AND compensated_at IS NULL`, sale)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, orders.ScanOrderRef)
}

// clampReserved keeps the waitlist's reserve of a sale consistent (reserved_clamp.lua): never
// above the units the waitlist's log holds, never above the stock, never below 0. A correction
// is a repair: reported, logged and counted (kind "reserved").
func (rc *Reconciler) clampReserved(ctx context.Context, sale, key string, held lock.Held, rep *admin.ReconcileReport) error {
	if err := lock.Fenced(ctx, rc.Pool, key, held, func(pgx.Tx) error { return nil }); err != nil {
		return err
	}
	before, after, ok, err := lua.ReservedClampCall{Sale: sale}.Run(ctx, rc.Redis)
	if err != nil {
		return fmt.Errorf("reserved_clamp.lua: %w", err)
	}
	if !ok || before == after {
		return nil
	}
	metricReconciled.WithLabelValues("reserved").Inc()
	rc.Log.Warn("reconcile: the waitlist's reserve had drifted", "sale_id", sale, "reserved_before", before, "reserved_after", after)
	rep.Actions = append(rep.Actions, fmt.Sprintf("the waitlist's reserve was %d, more than the waitlist holds or the stock: set to %d", before, after))
	return nil
}
