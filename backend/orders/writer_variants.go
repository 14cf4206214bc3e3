package orders

import (
	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/contract"
)

// The batched writer's statement for orders that are not plain (a variant, more than one unit,
// or a user's second purchase): the same one-statement insert and guarded take as
// insertAndTake, in units, with the sale's total and each variant's stock guarded together.
// A group of plain orders (every order of a sale without variants and with limit 1) still
// runs insertAndTake, unchanged.

// takeOutcome is what one sale's insert-and-take statement did: known is 0 for a sale Postgres
// does not know, inserted counts the new orders, fits is false when a stock guard refused (the
// sale's part is then rolled back to its savepoint and split).
type takeOutcome struct {
	known, inserted int
	fits            bool
}

// insertAndTakeUnits is insertAndTake for orders with variants and quantities: units is the
// sum of the new orders' quantities; upd takes them from the sale's total under the guard
// stock >= units, and vupd takes each variant's share under its own guard. vupd reads upd, so
// it runs after the sale's row is locked: every writer locks the sale's row before any of its
// variants' rows, and two batches cannot deadlock on them. The statement reports how many
// variants it needed (per) and how many it could take (vupd); anything short is a refusal.
// A variant Postgres does not know for the sale, or a variant named on a sale without
// variants, is a refusal too: the split path records such an order failed (unknown_variant).
const insertAndTakeUnits = `WITH sale AS (SELECT id, webhook_url FROM sales WHERE id = $1),
	ins AS (
		INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at, variant_id, quantity, seq)
		SELECT o, $1, u, s, NULLIF(r, ''), a, v, q, n
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $8::text[], $9::int[], $10::int[]) AS t(o, u, s, r, a, v, q, n)
		WHERE EXISTS (SELECT 1 FROM sale)
		ORDER BY u
		ON CONFLICT DO NOTHING
		RETURNING order_id, user_id, variant_id, quantity),
	n AS (SELECT count(*)::int AS n, COALESCE(sum(quantity), 0)::int AS units FROM ins),
	per AS (SELECT variant_id, sum(quantity)::int AS units FROM ins WHERE variant_id <> '' GROUP BY variant_id),
	upd AS (UPDATE sales SET stock = stock - n.units FROM n WHERE sales.id = $1 AND n.units > 0 AND sales.stock >= n.units RETURNING n.units),
	vupd AS (UPDATE sale_variants sv SET stock = sv.stock - per.units FROM per, upd
		WHERE sv.sale_id = $1 AND sv.variant_id = per.variant_id AND sv.stock >= per.units RETURNING sv.variant_id),
	ev AS (INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, url)
		SELECT gen_random_uuid()::text, 'order.created', ins.order_id, $1, ins.user_id, sale.webhook_url
		FROM ins, sale WHERE $7::bool OR sale.webhook_url IS NOT NULL)
	SELECT (SELECT count(*)::int FROM sale), (SELECT n FROM n), (SELECT units FROM n), COALESCE((SELECT units FROM upd), 0),
		(SELECT count(*)::int FROM per), (SELECT count(*)::int FROM vupd),
		(SELECT count(*)::int FROM ins WHERE variant_id <> '') > 0
			AND NOT EXISTS (SELECT 1 FROM sale_variants WHERE sale_id = $1) OR
		(SELECT count(*)::int FROM ins WHERE variant_id = '') > 0
			AND EXISTS (SELECT 1 FROM sale_variants WHERE sale_id = $1)`

// queueInsertAndTake queues the statement that fits the group: insertAndTake when every order
// is plain, insertAndTakeUnits otherwise.
func queueInsertAndTake(batch *pgx.Batch, sale string, group []contract.OrderMessage, defaultWebhook bool) {
	created := func(int) (string, string) { return contract.StatusCreated, "" }
	args := append(insertArgs(sale, group, created), defaultWebhook)
	if allPlain(group) {
		batch.Queue(insertAndTake, args...)
		return
	}
	batch.Queue(insertAndTakeUnits, append(args, unitArgs(group)...)...)
}

// scanTake reads the outcome of the statement queueInsertAndTake chose for group.
func scanTake(br pgx.BatchResults, group []contract.OrderMessage, o *takeOutcome) error {
	if allPlain(group) {
		var taken int
		if err := br.QueryRow().Scan(&o.known, &o.inserted, &taken); err != nil {
			return err
		}
		o.fits = o.inserted == taken
		return nil
	}
	var units, taken, per, vtaken int
	var mismatch bool
	if err := br.QueryRow().Scan(&o.known, &o.inserted, &units, &taken, &per, &vtaken, &mismatch); err != nil {
		return err
	}
	o.fits = units == taken && per == vtaken && !mismatch
	return nil
}

func allPlain(group []contract.OrderMessage) bool {
	for _, m := range group {
		if !plainOrder(m) {
			return false
		}
	}
	return true
}

// unitArgs are the variant, quantity and purchase-number arrays of group, in its order.
func unitArgs(group []contract.OrderMessage) []any {
	n := len(group)
	vs, qs, ns := make([]string, n), make([]int32, n), make([]int32, n)
	for i, m := range group {
		vs[i], qs[i], ns[i] = msgVariant(m), int32(msgUnits(m)), int32(msgSeq(m))
	}
	return []any{vs, qs, ns}
}
