package backend

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// Reconciling an unsharded sale with variants or a per-user limit above 1. Its buyers
// hash keeps only each user's latest order, so units, not buyers, are counted: the held hash
// is what Redis believes users hold, and
//
//	units held in Redis = units of live orders in Postgres + units of ended orders whose
//	                      compensation has not run + units in flight (accepted, not written)
//
// which gives the units in flight. The total stock is then repaired as for a single-stock
// sale, in units. Each variant's stock is repaired only when nothing is in flight (a unit in
// flight cannot be attributed to a variant from Redis), so a variant sale still moving
// reports it and is repaired by a later run. Buyers missing from Redis are restored (their
// latest live order). Not done here: recording lost orders (a buyer with no order after the
// grace period: their variant and quantity are known only to the message) and restoring a
// user's held units if Redis lost them.

// unitSale reports whether sale has variants or a per-user limit above 1.
func (s *Service) unitSale(ctx context.Context, sale string) (bool, error) {
	var unit bool
	err := s.Pool.QueryRow(ctx, `SELECT per_user_limit > 1 OR EXISTS (SELECT 1 FROM sale_variants WHERE sale_id = $1)
		FROM sales WHERE id = $1`, sale).Scan(&unit)
	return unit, err
}

type unitOrder struct {
	user, status, variant string
	quantity, seq         int
}

// reconcileUnits is steps 2 and 3 of Reconcile for a unit sale.
func (s *Service) reconcileUnits(ctx context.Context, sale, key string, held Held, rep *ReconcileReport) error {
	if k, err := s.shards.of(ctx, s.Pool, sale); err != nil {
		return err
	} else if k > 1 {
		// Each shard would need its own count of units in flight, and units a rebalance left
		// journaled between shards attributed to a variant: not done yet. Nothing is changed.
		rep.Actions = append(rep.Actions, "a sharded sale with variants or a per-user limit is not reconciled yet: nothing was changed")
		return nil
	}
	pending, err := s.pendingCompensations(ctx, sale)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		rep.Compensated = s.Compensator.Compensate(ctx, pending)
		metricReconciled.WithLabelValues("compensated").Add(float64(rep.Compensated))
		rep.Actions = append(rep.Actions, fmt.Sprintf("%d failed or cancelled orders still held units in Redis: returned", rep.Compensated))
	}

	// Snapshots, Postgres first.
	var pgStock int
	pgVariants := map[string]int{}
	orders := map[string]unitOrder{}
	err = pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1`, sale).Scan(&pgStock); err != nil {
			return err
		}
		vs, err := saleVariants(ctx, tx, sale)
		if err != nil {
			return err
		}
		for _, v := range vs {
			pgVariants[v.ID] = v.StockDB
		}
		rows, err := tx.Query(ctx, `SELECT order_id, user_id, status, variant_id, quantity, seq FROM orders WHERE sale_id = $1`, sale)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var o unitOrder
			if err := rows.Scan(&id, &o.user, &o.status, &o.variant, &o.quantity, &o.seq); err != nil {
				rows.Close()
				return err
			}
			orders[id] = o
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	var metaCmd, heldCmd, buyersCmd *redis.MapStringStringCmd
	var doneCmd *redis.StringSliceCmd
	if _, err := s.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		metaCmd = p.HGetAll(ctx, contract.MetaKey(sale))
		heldCmd = p.HGetAll(ctx, contract.HeldKey(sale))
		buyersCmd = p.HGetAll(ctx, contract.BuyersKey(sale))
		doneCmd = p.SMembers(ctx, contract.CompensatedKey(sale))
		return nil
	}); err != nil {
		return err
	}
	meta := metaCmd.Val()
	redisStock, err := strconv.ParseInt(meta[contract.FieldStock], 10, 64)
	if err != nil {
		return fmt.Errorf("redis stock of %s %q: %w", sale, meta[contract.FieldStock], err)
	}
	heldRedis := int64(0)
	for u, n := range heldCmd.Val() {
		if strings.HasPrefix(u, "#") {
			continue // a purchase counter, not units
		}
		h, _ := strconv.ParseInt(n, 10, 64)
		heldRedis += h
	}
	compensated := map[string]bool{}
	for _, id := range doneCmd.Val() {
		compensated[id] = true
	}
	live, unreturned := int64(0), int64(0)
	unreturnedV := map[string]int64{}
	latest := map[string]string{} // user -> their live order with the highest seq
	for id, o := range orders {
		switch o.status {
		case contract.StatusCreated, contract.StatusPaid:
			live += int64(o.quantity)
			if cur, ok := latest[o.user]; !ok || orders[cur].seq < o.seq {
				latest[o.user] = id
			}
		default:
			if !compensated[id] {
				unreturned += int64(o.quantity)
				unreturnedV[o.variant] += int64(o.quantity)
			}
		}
	}
	inFlight := heldRedis - live - unreturned
	if inFlight < 0 {
		rep.Actions = append(rep.Actions, fmt.Sprintf("Redis holds %d units fewer for users than Postgres orders do: users' held units are not repaired (see docs/operator.md)", -inFlight))
		inFlight = 0
	}
	rep.StockDB, rep.InFlight, rep.StockRedisBefore = pgStock, int(inFlight), redisStock
	target := int64(pgStock) - inFlight - unreturned
	rep.StockDelta = target - redisStock
	var args []any
	if len(pgVariants) > 0 {
		if inFlight > 0 {
			if rep.StockDelta != 0 {
				rep.Actions = append(rep.Actions, fmt.Sprintf("%d units in flight: the variants' stocks are left as they are; run reconcile again once they are written", inFlight))
			}
			rep.StockDelta = 0
		} else {
			// Each variant to its Postgres stock less its units not returned yet; these targets
			// add up to the total's (Postgres keeps the total the sum of its variants), so
			// "stock" ends as the sum of the variants even if Redis had them apart.
			for v, n := range pgVariants {
				have, _ := strconv.ParseInt(meta[contract.VariantField(v)], 10, 64)
				if d := int64(n) - unreturnedV[v] - have; d != 0 {
					args = append(args, contract.VariantField(v), d)
				}
			}
		}
	}
	buyers := buyersCmd.Val()
	for u, id := range latest {
		if buyers[u] == "" {
			args = append(args, u, id)
			rep.BuyersRestored = append(rep.BuyersRestored, u)
		}
	}
	if rep.StockDelta == 0 && len(args) == 0 {
		rep.StockRedisAfter = redisStock
		return nil
	}
	// Postgres is not written here, but the fence still orders this repair after any newer
	// holder's: refuse to touch Redis if one exists.
	if err := s.fenced(ctx, key, held, func(pgx.Tx) error { return nil }); err != nil {
		return err
	}
	out, err := lua.Reconcile.Run(ctx, s.Redis, []string{contract.MetaKey(sale), contract.BuyersKey(sale)},
		append([]any{sale, rep.StockDelta}, args...)...).Int64Slice()
	if err != nil {
		return fmt.Errorf("reconcile.lua: %w", err)
	}
	rep.StockRedisAfter = out[0]
	if rep.StockDelta != 0 {
		metricReconciled.WithLabelValues("stock").Inc()
		rep.Actions = append(rep.Actions, fmt.Sprintf("Redis stock was %d units, Postgres says %d with %d in flight and %d not returned yet: adjusted by %+d",
			redisStock, pgStock, inFlight, unreturned, rep.StockDelta))
	}
	if len(rep.BuyersRestored) > 0 {
		metricReconciled.WithLabelValues("buyer").Add(float64(len(rep.BuyersRestored)))
		rep.Actions = append(rep.Actions, fmt.Sprintf("%d buyers with an order in Postgres were missing from Redis: restored", len(rep.BuyersRestored)))
	}
	return nil
}
