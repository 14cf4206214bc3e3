package webhook

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// DrawEvent is one draw event to record in the outbox (the columns 009_draws.sql adds): the
// worker sends it as a contract.DrawEvent.
type DrawEvent struct {
	Type    string // contract.EventDrawWon, EventDrawLost or EventDrawExpired
	UserID  string
	EntryID string
	Variant string
	// Wave and ClaimUntil: the wave that made the entry a winner and its claim window's end
	// (won, expired); 0 and the zero time for lost, whose body then has neither.
	Wave       int
	ClaimUntil time.Time
}

// DrawEventID is a draw event's id (the receiver's dedupe key): it names the event itself
// ("<type>:<sale>:<entry id>:<wave>"), so that a draw step recorded twice (a job that died
// after its writes and ran again) records it once (EnqueueDraw skips an id it has).
func DrawEventID(sale string, e DrawEvent) string {
	return e.Type + ":" + sale + ":" + e.EntryID + ":" + strconv.Itoa(e.Wave)
}

// EnqueueDraw records the events of one sale's draw inside tx, in one statement whatever their
// number (a variant's million losers are one batch). As Enqueue: only when the sale has a
// webhook_url or defaultURL is true; each entrant's events share the order id
// "draw:<sale>:<user>", so they are delivered in order, a new one blocked behind an undelivered
// one. An event already recorded (same DrawEventID) is skipped.
func EnqueueDraw(ctx context.Context, tx pgx.Tx, sale string, events []DrawEvent, defaultURL bool) error {
	if len(events) == 0 {
		return nil
	}
	n := len(events)
	ids, types, users, entries, variants := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	waves, until := make([]*int32, n), make([]*time.Time, n)
	for i, e := range events {
		ids[i], types[i], users[i], entries[i], variants[i] = DrawEventID(sale, e), e.Type, e.UserID, e.EntryID, e.Variant
		if e.Wave > 0 {
			w := int32(e.Wave)
			waves[i] = &w
		}
		if !e.ClaimUntil.IsZero() {
			u := e.ClaimUntil
			until[i] = &u
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, type, order_id, sale_id, user_id, url, next_at, entry_id, variant, wave, claim_until)
		SELECT x.id, x.type, 'draw:' || $1 || ':' || x.user_id, $1, x.user_id, s.webhook_url,
			CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.order_id = 'draw:' || $1 || ':' || x.user_id AND e.state <> 'delivered')
			THEN `+blockedUntil+` ELSE now() END,
			x.entry_id, x.variant, x.wave, x.claim_until
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::timestamptz[])
			WITH ORDINALITY AS x(id, type, user_id, entry_id, variant, wave, claim_until, n)
		JOIN sales s ON s.id = $1
		WHERE $9 OR s.webhook_url IS NOT NULL
		ORDER BY x.n
		ON CONFLICT (id) DO NOTHING`, sale, ids, types, users, entries, variants, waves, until, defaultURL)
	return err
}
