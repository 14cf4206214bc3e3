package orders

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
)

// ReasonUnknownVariant is the failure reason of an order for a variant Postgres does not know
// for its sale (or a variant named on a sale without variants, or none named on a sale with
// variants). The gate refuses such purchases; only a message from elsewhere can carry one.
const ReasonUnknownVariant = "unknown_variant"

const insertOrders = `INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at, variant_id, quantity, seq)
	SELECT o, $1, u, s, NULLIF(r, ''), a, v, q, n
	FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::int[], $9::int[]) AS t(o, u, s, r, a, v, q, n)
	ORDER BY u
	ON CONFLICT DO NOTHING
	RETURNING order_id, user_id, status, variant_id, quantity`

// splitSale writes one sale's part of a batch that does not fit the stock: under the sale's row
// lock (then its variants' rows, the order every writer takes them in), the new orders are
// taken in acceptance order; those whose units fit both the sale's total and their variant's
// stock are created, the others are recorded failed.
func splitSale(ctx context.Context, tx pgx.Tx, sale string, group []contract.OrderMessage, defaultWebhook bool) (created int, failed []OrderRef, dups int, err error) {
	var stock int
	if err := tx.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1 FOR UPDATE`, sale).Scan(&stock); err != nil {
		return 0, nil, 0, err
	}
	variants, err := lockVariants(ctx, tx, sale)
	if err != nil {
		return 0, nil, 0, err
	}
	ids := make([]string, len(group))
	users := make([]string, len(group))
	seqs := make([]int32, len(group))
	for i, m := range group {
		ids[i], users[i], seqs[i] = m.OrderID, m.UserID, int32(msgSeq(m))
	}
	// Already written: the same order id (any status), or a live order of the same purchase
	// (user and purchase number).
	rows, err := tx.Query(ctx, `SELECT order_id, user_id, seq, status IN ('created', 'paid') FROM orders
		WHERE order_id = ANY($1) OR (sale_id = $2 AND (user_id, seq) IN (SELECT * FROM unnest($3::text[], $4::int[]))
			AND status IN ('created', 'paid'))`, ids, sale, users, seqs)
	if err != nil {
		return 0, nil, 0, err
	}
	type purchase struct {
		user string
		seq  int
	}
	existingOrder, existingPurchase := map[string]bool{}, map[purchase]bool{}
	for rows.Next() {
		var o, u string
		var seq int
		var live bool
		if err := rows.Scan(&o, &u, &seq, &live); err != nil {
			rows.Close()
			return 0, nil, 0, err
		}
		existingOrder[o] = true
		if live {
			existingPurchase[purchase{u, seq}] = true
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, 0, err
	}
	fresh := group[:0:0]
	for _, m := range group {
		if !existingOrder[m.OrderID] && !existingPurchase[purchase{m.UserID, msgSeq(m)}] {
			fresh = append(fresh, m)
		}
	}
	// Decide in acceptance order (group is in it): an order takes its units when both the
	// total and its variant have them.
	left, vleft := stock, map[string]int{}
	for v, n := range variants {
		vleft[v] = n
	}
	status := make([][2]string, len(fresh))
	for i, m := range fresh {
		v, q := msgVariant(m), msgUnits(m)
		_, known := vleft[v]
		switch {
		case (v != "") != (len(variants) > 0) || (v != "" && !known):
			status[i] = [2]string{contract.StatusFailed, ReasonUnknownVariant}
		case q > left || (v != "" && q > vleft[v]):
			status[i] = [2]string{contract.StatusFailed, ReasonSoldOutInDB}
		default:
			status[i] = [2]string{contract.StatusCreated, ""}
			left -= q
			if v != "" {
				vleft[v] -= q
			}
		}
	}
	args := insertArgs(sale, fresh, func(i int) (string, string) { return status[i][0], status[i][1] })
	rows, err = tx.Query(ctx, insertOrders, append(args, unitArgs(fresh)...)...)
	if err != nil {
		return 0, nil, 0, err
	}
	inserted, units := 0, 0
	taken := map[string]int{}
	var createdIDs, failedIDs []string
	for rows.Next() {
		var o, u, st, v string
		var q int
		if err := rows.Scan(&o, &u, &st, &v, &q); err != nil {
			rows.Close()
			return 0, nil, 0, err
		}
		inserted++
		if st == contract.StatusCreated {
			created++
			units += q
			if v != "" {
				taken[v] += q
			}
			createdIDs = append(createdIDs, o)
		} else {
			failed = append(failed, OrderRef{OrderID: o, SaleID: sale, UserID: u, Variant: v, Quantity: q})
			failedIDs = append(failedIDs, o)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, 0, err
	}
	if err := webhook.Enqueue(ctx, tx, contract.EventOrderCreated, createdIDs, defaultWebhook); err != nil {
		return 0, nil, 0, err
	}
	if err := webhook.Enqueue(ctx, tx, contract.EventOrderFailed, failedIDs, defaultWebhook); err != nil {
		return 0, nil, 0, err
	}
	if units > 0 {
		tag, err := tx.Exec(ctx, `UPDATE sales SET stock = stock - $2 WHERE id = $1 AND stock >= $2`, sale, units)
		if err != nil {
			return 0, nil, 0, err
		}
		if tag.RowsAffected() == 0 {
			return 0, nil, 0, errors.New("stock guard refused under the sale's row lock")
		}
	}
	if err := takeVariants(ctx, tx, sale, taken); err != nil {
		return 0, nil, 0, err
	}
	return created, failed, len(group) - inserted, nil
}

// lockVariants reads a sale's variant stocks, locking their rows (empty for a sale without
// variants).
func lockVariants(ctx context.Context, tx pgx.Tx, sale string) (map[string]int, error) {
	rows, err := tx.Query(ctx, `SELECT variant_id, stock FROM sale_variants WHERE sale_id = $1 ORDER BY variant_id FOR UPDATE`, sale)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			rows.Close()
			return nil, err
		}
		out[v] = n
	}
	return out, rows.Err()
}

// takeVariants takes units from each variant under its guard, all or nothing.
func takeVariants(ctx context.Context, tx pgx.Tx, sale string, units map[string]int) error {
	if len(units) == 0 {
		return nil
	}
	vs, ns := make([]string, 0, len(units)), make([]int32, 0, len(units))
	for v, n := range units {
		vs, ns = append(vs, v), append(ns, int32(n))
	}
	tag, err := tx.Exec(ctx, `UPDATE sale_variants sv SET stock = sv.stock - t.n
		FROM unnest($2::text[], $3::int[]) AS t(v, n) WHERE sv.sale_id = $1 AND sv.variant_id = t.v AND sv.stock >= t.n`, sale, vs, ns)
	if err != nil {
		return err
	}
	if int(tag.RowsAffected()) != len(units) {
		return errors.New("variant stock guard refused under the sale's row lock")
	}
	return nil
}
