package webhook

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// UnitEvent is one step of a waitlist offer to record in the outbox (docs/room.md, "The
// waitlist"): the worker sends it as a contract.UnitEvent.
type UnitEvent struct {
	Type       string // contract.EventUnitOffered or EventUnitPassed
	UserID     string
	OfferUntil time.Time
}

// UnitEventID is a unit event's id (the receiver's dedupe key): it names the offer itself
// ("<type>:<sale>:<user>:<offer until, unix ms>"), so an offer's events recorded again (a
// backend that restarted reads the waitlist's log from its start) are recorded once.
func UnitEventID(sale string, e UnitEvent) string {
	return e.Type + ":" + sale + ":" + e.UserID + ":" + strconv.FormatInt(e.OfferUntil.UnixMilli(), 10)
}

// EnqueueUnit records one sale's unit events inside tx, as EnqueueDraw records a draw's: only
// when the sale has a webhook_url or defaultURL is true; each waiter's events share the order
// id "unit:<sale>:<user>", so they are delivered in order; an event already recorded is skipped.
func EnqueueUnit(ctx context.Context, tx pgx.Tx, sale string, events []UnitEvent, defaultURL bool) error {
	if len(events) == 0 {
		return nil
	}
	n := len(events)
	ids, types, users, until := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, e := range events {
		ids[i], types[i], users[i], until[i] = UnitEventID(sale, e), e.Type, e.UserID, e.OfferUntil
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, url, next_at, claim_until)
		SELECT x.id, x.type, 'unit:' || $1 || ':' || x.user_id, $1, x.user_id, s.webhook_url,
			CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.order_id = 'unit:' || $1 || ':' || x.user_id AND e.state <> 'delivered')
			THEN `+blockedUntil+` ELSE now() END,
			x.claim_until
		FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[])
			WITH ORDINALITY AS x(id, type, user_id, claim_until, n)
		JOIN sales s ON s.id = $1
		WHERE $6 OR s.webhook_url IS NOT NULL
		ORDER BY x.n
		ON CONFLICT (id) DO NOTHING`, sale, ids, types, users, until, defaultURL)
	return err
}
