package orders

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// Compensator returns to Redis the units of accepted orders that ended failed or cancelled in
// Postgres: the order's quantity back to the stock (and to its variant's), the user's held
// units down by as much, buyer removed, sold-out cleared and broadcast (lua/compensate.lua,
// idempotent per order id), then records compensated_at on the order. What it could not do
// (Redis down) stays compensated_at IS NULL and is retried by the sweeper.
type Compensator struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger

	// Waitlist, when set, hands a unit returned in a sold-out room sale to the room's next
	// present waiter (compensate.lua holds it for the waitlist; nil: every unit goes back to the
	// open pool).
	Waitlist *Waitlist

	// Released, when set, is told of each sale that got units back by a call, after the
	// compensations are recorded: the draws' step (draw.Runner.Released), which records a
	// waitlist raise compensate.lua made and opens a wave on a unit released after its wave.
	Released func(ctx context.Context, sale string)

	shards shards.Counts
}

// Compensate returns the units of refs and reports how many were returned now.
func (c *Compensator) Compensate(ctx context.Context, refs []OrderRef) int {
	if len(refs) == 0 {
		return 0
	}
	// Load once so the pipeline can use EVALSHA for every order.
	if err := lua.Compensate.Load(ctx, c.Redis).Err(); err != nil {
		metricCompensations.WithLabelValues("error").Add(float64(len(refs)))
		c.Log.Warn("compensation postponed: redis", "orders", len(refs), "err", err)
		return 0
	}
	pipe := c.Redis.Pipeline()
	cmds := make([]*redis.Cmd, len(refs))
	for i, r := range refs {
		// A sharded sale's unit goes back to the user's shard, where its buyers entry is.
		k, err := c.shards.Of(ctx, c.Pool, r.SaleID)
		if err != nil {
			metricCompensations.WithLabelValues("error").Add(float64(len(refs)))
			c.Log.Warn("compensation postponed: shard count", "sale_id", r.SaleID, "err", err)
			return 0
		}
		target := contract.UserShardID(r.SaleID, r.UserID, k)
		cmds[i] = lua.CompensateCall{Sale: target, OrderID: r.OrderID, User: r.UserID, Variant: r.Variant, Quantity: r.Quantity}.EvalSha(ctx, pipe)
	}
	_, _ = pipe.Exec(ctx)
	var done []string
	returned := 0
	stepped, sales := map[string]bool{}, []string(nil)
	for i, cmd := range cmds {
		returnedNow, _, err := lua.CompensateReply(cmd)
		if err != nil {
			metricCompensations.WithLabelValues("error").Inc()
			c.Log.Warn("compensation postponed", "order_id", refs[i].OrderID, "sale_id", refs[i].SaleID, "err", err)
			continue
		}
		if returnedNow {
			returned++
			if (c.Waitlist != nil || c.Released != nil) && !stepped[refs[i].SaleID] {
				stepped[refs[i].SaleID] = true
				sales = append(sales, refs[i].SaleID)
			}
			metricCompensations.WithLabelValues("returned").Inc()
		} else {
			metricCompensations.WithLabelValues("already").Inc()
		}
		done = append(done, refs[i].OrderID)
	}
	if len(done) > 0 {
		if _, err := c.Pool.Exec(ctx, `UPDATE orders SET compensated_at = now() WHERE order_id = ANY($1) AND compensated_at IS NULL`, done); err != nil {
			// compensate.lua is idempotent: the retry pass will run it again and only then record it.
			c.Log.Warn("compensated_at not recorded", "orders", len(done), "err", err)
		}
	}
	for _, sale := range sales {
		if c.Waitlist != nil {
			c.step(ctx, sale)
		}
		if c.Released != nil {
			c.Released(ctx, sale)
		}
	}
	return returned
}

// step runs the waitlist of a sale that got units back, so that a held unit is offered at once.
func (c *Compensator) step(ctx context.Context, sale string) {
	if _, err := c.Waitlist.Step(ctx, sale); err != nil {
		c.Log.Warn("waitlist step postponed to the next sweep", "sale_id", sale, "err", err)
	}
}

// RetryPending compensates failed or cancelled orders whose compensation was not recorded
// (Redis was down, or the process died between commit and compensation). Returns how many
// units were returned.
func (c *Compensator) RetryPending(ctx context.Context, limit int) (int, error) {
	rows, err := c.Pool.Query(ctx, `SELECT `+OrderRefColumns+` FROM orders
		WHERE status IN ('failed', 'cancelled') AND compensated_at IS NULL
		ORDER BY updated_at LIMIT $1`, limit)
	if err != nil {
		return 0, err
	}
	refs, err := pgx.CollectRows(rows, ScanOrderRef)
	if err != nil {
		return 0, err
	}
	return c.Compensate(ctx, refs), nil
}

// OrderRefColumns are the columns ScanOrderRef reads, for a query on orders (unqualified).
const OrderRefColumns = `order_id, sale_id, user_id, variant_id, quantity`

// ScanOrderRef reads the OrderRefColumns of one row.
func ScanOrderRef(r pgx.CollectableRow) (OrderRef, error) {
	var o OrderRef
	return o, r.Scan(&o.OrderID, &o.SaleID, &o.UserID, &o.Variant, &o.Quantity)
}
