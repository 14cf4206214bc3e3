package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/lua"
)

// Reconciling a sale with variants or a per-user limit above 1 (a "unit sale"), sharded or
// not. Its buyers hash keeps only each user's latest order, so units, not buyers, are
// counted, per user: what Redis says the user holds (the held hash when the limit is above 1,
// else 1 per buyers entry) against the units of their orders in Postgres (PlanUnits,
// plan.go). From that:
//
//  1. a user whose latest order never reached Postgres after the grace period has it
//     recorded failed (lost_in_transit) with all their units in flight, and compensated;
//  2. pending compensations run; the snapshots are taken (again, after step 1);
//  3. the total stock is repaired in units, each variant to its Postgres stock (only lowered
//     while units are in flight: those cannot be told apart by variant), users' held units
//     and purchase counters Redis lost are raised, buyers Redis forgot restored. A sharded
//     sale is the sum of its shards: interrupted moves are finished first, the repair is
//     spread over the shards (never taking one below 0 as far as the snapshot knows), each
//     user's part goes to their shard, and a rebalance follows.
//
// A lost order's variant is unknown to the backend (it was in the message): its failed row
// has variant_id '' and compensation gives its units back to the sale's total only. Postgres
// never took them from a variant, so the variant's repair (step 3) gives them back to it from
// Postgres: in the same run when nothing else is in flight, else in a later one. Until then
// the variant refuses units that exist (never the reverse).

// unitSale reports whether sale has variants or a per-user limit above 1.
func (rc *Reconciler) unitSale(ctx context.Context, sale string) (bool, error) {
	var unit bool
	err := rc.Pool.QueryRow(ctx, `SELECT per_user_limit > 1 OR EXISTS (SELECT 1 FROM sale_variants WHERE sale_id = $1)
		FROM sales WHERE id = $1`, sale).Scan(&unit)
	return unit, err
}

// reconcileUnits is Reconcile for a unit sale.
func (rc *Reconciler) reconcileUnits(ctx context.Context, sale, key string, held lock.Held, rep *admin.ReconcileReport) error {
	k, ids, err := rc.reconcileShardIDs(ctx, sale, rep)
	if err != nil {
		return err
	}
	if err := rc.compensatePending(ctx, sale, rep, "units"); err != nil {
		return err
	}

	cutoff := rc.Now().Add(-rc.grace())
	pg, shards, err := rc.unitSnapshots(ctx, sale, ids)
	if err != nil {
		return err
	}
	plan := PlanUnits(pg, shards, cutoff)
	if len(plan.Lost) > 0 {
		inserted, err := rc.recordLost(ctx, sale, key, held, plan.Lost, rep)
		if err != nil {
			return err
		}
		if len(inserted) > 0 {
			units := 0
			for _, l := range inserted {
				units += l.Quantity
			}
			rep.Actions = append(rep.Actions, fmt.Sprintf("%d buyers had units but no order after %s: their latest orders recorded failed (%s) with their %d units, returned",
				len(inserted), rc.grace(), ReasonLost, units))
			// Their units are back (or their compensation is pending and counted so): look
			// again rather than guess what compensation changed.
			if pg, shards, err = rc.unitSnapshots(ctx, sale, ids); err != nil {
				return err
			}
			plan = PlanUnits(pg, shards, cutoff)
		}
	}

	rep.StockDB, rep.InFlight, rep.StockRedisBefore = int(plan.PGStock), int(plan.InFlight), plan.RedisStock
	rep.StockDelta = plan.StockDelta
	deltas, pairs := plan.ShardArgs(shards)
	work := false
	for i := range shards {
		work = work || deltas[i] != 0 || len(pairs[i]) > 0
	}
	if plan.VariantsHeld {
		rep.Actions = append(rep.Actions, fmt.Sprintf("%d units in flight: the repairs that would add units to the stock or a variant wait; run reconcile again once they are written", plan.InFlight))
	}
	if !work {
		rep.StockRedisAfter = plan.RedisStock
		return rc.Rebalance(ctx, sale, k, rep)
	}
	// Postgres is not written here, but the fence still orders this repair after any newer
	// holder's: refuse to touch Redis if one exists.
	if err := lock.Fenced(ctx, rc.Pool, key, held, func(pgx.Tx) error { return nil }); err != nil {
		return err
	}
	raised := int64(0)
	for i, sh := range shards {
		if deltas[i] == 0 && len(pairs[i]) == 0 {
			rep.StockRedisAfter += sh.Stock
			continue
		}
		stock, _, n, err := lua.ReconcileCall{Sale: sh.ID, Delta: deltas[i], Pairs: pairs[i], Held: true}.Run(ctx, rc.Redis)
		if err != nil {
			return fmt.Errorf("reconcile.lua on %s: %w", sh.ID, err)
		}
		rep.StockRedisAfter += stock
		raised += n
	}
	for _, u := range slices.Sorted(maps.Keys(plan.Restore)) {
		rep.BuyersRestored = append(rep.BuyersRestored, u)
	}
	if rep.StockDelta != 0 {
		metricReconciled.WithLabelValues("stock").Inc()
		rep.Actions = append(rep.Actions, fmt.Sprintf("Redis stock was %d units, Postgres says %d with %d in flight and %d not returned yet: adjusted by %+d",
			plan.RedisStock, plan.PGStock, plan.InFlight, plan.Unreturned, rep.StockDelta))
	}
	if len(plan.VariantDelta) > 0 {
		metricReconciled.WithLabelValues("stock").Inc()
		var b strings.Builder
		for _, v := range slices.Sorted(maps.Keys(plan.VariantDelta)) {
			fmt.Fprintf(&b, " %s %+d", v, plan.VariantDelta[v])
		}
		rep.Actions = append(rep.Actions, fmt.Sprintf("the stock of %d variants differed from Postgres: adjusted%s", len(plan.VariantDelta), b.String()))
	}
	if len(rep.BuyersRestored) > 0 {
		metricReconciled.WithLabelValues("buyer").Add(float64(len(rep.BuyersRestored)))
		rep.Actions = append(rep.Actions, fmt.Sprintf("%d buyers with an order in Postgres were missing from Redis: restored", len(rep.BuyersRestored)))
	}
	if raised > 0 {
		metricReconciled.WithLabelValues("held").Add(float64(raised))
		rep.Actions = append(rep.Actions, fmt.Sprintf("%d users' held units or purchase counters were below their orders in Postgres (%d units short): raised", len(plan.Raise), plan.RaisedShort))
	}
	return rc.Rebalance(ctx, sale, k, rep)
}

// unitSnapshots reads Postgres (repeatable read) and then each shard of Redis (one MULTI per
// shard: a purchase, a compensation and a buyer's held units all live in the user's shard, so
// the shards' snapshots together count each of them once; moves between shards happen under
// the sale's lock, which reconcile holds).
func (rc *Reconciler) unitSnapshots(ctx context.Context, sale string, ids []string) (Postgres, []Shard, error) {
	pg := Postgres{Variants: map[string]int{}, Orders: map[string]Order{}}
	err := pgx.BeginTxFunc(ctx, rc.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT stock, per_user_limit FROM sales WHERE id = $1`, sale).Scan(&pg.Stock, &pg.Limit); err != nil {
			return err
		}
		vs, err := shards.Variants(ctx, tx, sale)
		if err != nil {
			return err
		}
		for _, v := range vs {
			pg.Variants[v.ID] = v.StockDB
		}
		rows, err := tx.Query(ctx, `SELECT order_id, user_id, status, variant_id, quantity, seq FROM orders WHERE sale_id = $1`, sale)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var o Order
			if err := rows.Scan(&id, &o.User, &o.Status, &o.Variant, &o.Quantity, &o.Seq); err != nil {
				rows.Close()
				return err
			}
			pg.Orders[id] = o
		}
		return rows.Err()
	})
	if err != nil {
		return pg, nil, err
	}
	shards := make([]Shard, len(ids))
	for i, id := range ids {
		var metaCmd, heldCmd, buyersCmd *redis.MapStringStringCmd
		var doneCmd *redis.StringSliceCmd
		if _, err := rc.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
			metaCmd = p.HGetAll(ctx, contract.MetaKey(id))
			heldCmd = p.HGetAll(ctx, contract.HeldKey(id))
			buyersCmd = p.HGetAll(ctx, contract.BuyersKey(id))
			doneCmd = p.SMembers(ctx, contract.CompensatedKey(id))
			return nil
		}); err != nil {
			return pg, nil, err
		}
		sh := Shard{ID: id, Meta: metaCmd.Val(), Held: heldCmd.Val(), Buyers: buyersCmd.Val(), Compensated: map[string]bool{}}
		n, err := strconv.ParseInt(sh.Meta[contract.FieldStock], 10, 64)
		if err != nil {
			return pg, nil, fmt.Errorf("redis stock of %s %q: %w", id, sh.Meta[contract.FieldStock], err)
		}
		sh.Stock = n
		for _, o := range doneCmd.Val() {
			sh.Compensated[o] = true
		}
		shards[i] = sh
	}
	return pg, shards, nil
}
