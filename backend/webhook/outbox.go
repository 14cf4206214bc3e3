package webhook

import (
	"context"
	"errors"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// The webhook outbox: every order change the shop must hear of writes its event in the same
// transaction as the change (the table: backend/internal/schema/migrations/004_webhooks.sql).
// An event is recorded when its sale has a webhook_url or the backend has a default URL
// (SECKILL_WEBHOOK_URL); with neither, nothing is written and the change costs nothing more.

// blockedUntil is the next_at of an event that waits for an earlier event of its order: the
// delivery of that one releases it (Worker.record), and the worker's periodic unblock
// catches any release that raced with the insert.
const blockedUntil = `timestamptz '3000-01-01 00:00:00+00'`

// Enqueue records one event of type typ for each of the given orders, inside tx. Orders
// are taken in id order so that concurrent transactions insert in one order. An order that
// still has an undelivered event gets the new one blocked behind it, so the worker's scan of
// due events never walks over events that must wait.
func Enqueue(ctx context.Context, tx pgx.Tx, typ string, orderIDs []string, defaultURL bool) error {
	if len(orderIDs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, url, next_at)
		SELECT gen_random_uuid()::text, $1, o.order_id, o.sale_id, o.user_id, s.webhook_url,
			CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.order_id = o.order_id AND e.state <> 'delivered')
			THEN `+blockedUntil+` ELSE now() END
		FROM orders o JOIN sales s ON s.id = o.sale_id
		WHERE o.order_id = ANY($2) AND ($3 OR s.webhook_url IS NOT NULL)
		ORDER BY o.order_id`, typ, orderIDs, defaultURL)
	return err
}

// HasDefaultURL reports whether every sale's events are recorded (a default URL is set); a nil
// worker (no signing secret) has none.
func (w *Worker) HasDefaultURL() bool { return w != nil && w.DefaultURL != "" }

// ValidURL accepts an absolute http or https URL with a host.
func ValidURL(raw string) error {
	if len(raw) > 2048 {
		return errors.New("longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return errors.New("want an absolute http:// or https:// URL without credentials")
	}
	return nil
}
