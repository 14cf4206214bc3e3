package orders

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/contract"
)

// ReasonSoldOutInDB is the failure reason of an order the gate accepted but the database's
// stock guard refused (Redis counted more stock than Postgres had).
const ReasonSoldOutInDB = "sold_out_in_db"

// Writer writes winners' orders to Postgres in batches: one transaction per batch, idempotent
// by order id and by (sale, user), with a stock guard that never lets stock go negative.
type Writer struct {
	Pool *pgxpool.Pool
	// DefaultWebhook is true when the backend has a default webhook URL: every order's
	// order.created / order.failed event is then written with it (webhook.Enqueue). Without
	// it, only sales with their own webhook_url get events.
	DefaultWebhook bool
}

// OrderRef names an order for compensation.
type OrderRef struct {
	OrderID, SaleID, UserID string
	// Variant ("" none) and Quantity (0 means 1) say which units compensation gives back.
	Variant  string
	Quantity int
}

// BatchResult says what a batch did.
type BatchResult struct {
	// Created counts the orders created by this batch.
	Created int
	// Failed are the orders this batch created as failed (sold_out_in_db): their units must be
	// returned to Redis (compensation).
	Failed []OrderRef
	// Duplicates counts messages that changed nothing (the order or the (sale, user) pair
	// was already written, or repeated inside the batch).
	Duplicates int
	// UnknownSale are the indexes (into the batch) of messages for a sale Postgres does not
	// know: the consumer dead-letters them.
	UnknownSale []int
}

// WriteBatch writes msgs in one transaction. Every sale in the batch gets one statement that
// inserts its orders (INSERT ... SELECT FROM unnest ... ON CONFLICT DO NOTHING) and takes their
// units with a guarded UPDATE (stock >= n); all sales' statements travel in one pipeline, so a
// batch costs three round trips (begin, the statements, commit) whatever its size. When the guard
// refuses (Postgres has less stock than the batch needs), that sale's part is rolled back to
// its savepoint and redone under the sale's row lock: the orders that fit are created, the rest
// are recorded failed with reason sold_out_in_db. Nothing is written when it returns an error.
func (w *Writer) WriteBatch(ctx context.Context, msgs []contract.OrderMessage) (BatchResult, error) {
	var res BatchResult
	bySale := map[string][]int{}
	var sales []string
	for i, m := range msgs {
		if _, ok := bySale[m.SaleID]; !ok {
			sales = append(sales, m.SaleID)
		}
		bySale[m.SaleID] = append(bySale[m.SaleID], i)
	}
	// A fixed order of sales keeps two instances from taking sale row locks in opposite orders.
	sort.Strings(sales)

	tx, err := w.Pool.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()

	groups := make([][]contract.OrderMessage, len(sales))
	batch := &pgx.Batch{}
	for i, sale := range sales {
		groups[i] = dedupe(msgs, bySale[sale])
		res.Duplicates += len(bySale[sale]) - len(groups[i])
		batch.Queue("SAVEPOINT " + savepoint(i))
		queueInsertAndTake(batch, sale, groups[i], w.DefaultWebhook)
	}
	outcomes := make([]takeOutcome, len(sales))
	br := tx.SendBatch(ctx, batch)
	for i := range sales {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return BatchResult{}, err
		}
		if err := scanTake(br, groups[i], &outcomes[i]); err != nil {
			br.Close()
			return BatchResult{}, err
		}
	}
	if err := br.Close(); err != nil {
		return BatchResult{}, err
	}
	for i, sale := range sales {
		o := outcomes[i]
		switch {
		case o.known == 0:
			res.Duplicates -= len(bySale[sale]) - len(groups[i])
			res.UnknownSale = append(res.UnknownSale, bySale[sale]...)
		case o.fits:
			res.Created += o.inserted
			res.Duplicates += len(groups[i]) - o.inserted
		default:
			// The guard refused: undo this sale's inserts and split under the row lock.
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint(i)); err != nil {
				return BatchResult{}, err
			}
			created, failed, dups, err := splitSale(ctx, tx, sale, groups[i], w.DefaultWebhook)
			if err != nil {
				return BatchResult{}, err
			}
			res.Created += created
			res.Duplicates += dups
			res.Failed = append(res.Failed, failed...)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return BatchResult{}, err
	}
	return res, nil
}

func savepoint(i int) string { return "sale_" + strconv.Itoa(i) }

// insertAndTake inserts a sale's new orders as created and takes their units, in one statement:
// known is 0 for a sale Postgres does not know (then nothing is inserted: no foreign-key error
// aborts the batch), inserted counts the new orders, taken is inserted when the stock guard let
// the update through and 0 when it refused. The same statement writes each new order's
// order.created webhook event ($7: a default webhook URL is set), so the rollback to the sale's
// savepoint that follows a refusal takes the events back with the orders.
const insertAndTake = `WITH sale AS (SELECT id, webhook_url FROM sales WHERE id = $1),
	ins AS (
		INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at)
		SELECT o, $1, u, s, NULLIF(r, ''), a
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS t(o, u, s, r, a)
		WHERE EXISTS (SELECT 1 FROM sale)
		ORDER BY u
		ON CONFLICT DO NOTHING
		RETURNING order_id, user_id),
	n AS (SELECT count(*)::int AS n FROM ins),
	upd AS (UPDATE sales SET stock = stock - n.n FROM n WHERE sales.id = $1 AND n.n > 0 AND sales.stock >= n.n RETURNING n.n),
	ev AS (INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, url)
		SELECT gen_random_uuid()::text, 'order.created', ins.order_id, $1, ins.user_id, sale.webhook_url
		FROM ins, sale WHERE $7::bool OR sale.webhook_url IS NOT NULL)
	SELECT (SELECT count(*)::int FROM sale), (SELECT n FROM n), COALESCE((SELECT n FROM upd), 0)`

// dedupe keeps the first message of each order id and of each user's purchase (user and
// purchase number: one per user in a limit-1 sale), in acceptance order (the earliest accepted
// buyer gets a unit first when the guard has to split), sorted for the insert by user id so
// that concurrent batches take index locks in one order.
func dedupe(msgs []contract.OrderMessage, idx []int) []contract.OrderMessage {
	sorted := make([]contract.OrderMessage, 0, len(idx))
	for _, i := range idx {
		sorted = append(sorted, msgs[i])
	}
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].AcceptedAt.Before(sorted[b].AcceptedAt) })
	type purchase struct {
		user string
		seq  int
	}
	seenOrder := make(map[string]bool, len(sorted))
	seenUser := make(map[purchase]bool, len(sorted))
	out := sorted[:0]
	for _, m := range sorted {
		p := purchase{m.UserID, msgSeq(m)}
		if seenOrder[m.OrderID] || seenUser[p] {
			continue
		}
		seenOrder[m.OrderID], seenUser[p] = true, true
		out = append(out, m)
	}
	return out
}

func insertArgs(sale string, ms []contract.OrderMessage, status func(i int) (string, string)) []any {
	n := len(ms)
	ids, users, sts, reasons, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, m := range ms {
		ids[i], users[i], at[i] = m.OrderID, m.UserID, m.AcceptedAt
		sts[i], reasons[i] = status(i)
	}
	return []any{sale, ids, users, sts, reasons, at}
}

// Transient reports whether a write error may succeed when retried: the database is
// unreachable or restarting, or the transaction lost a serialization race or a deadlock. Any
// other database error (a constraint or data error) is about the batch's content.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58", "40":
			return true
		}
		return false
	}
	// Not a server error: a connection error, a pool error, a closed connection.
	return true
}
