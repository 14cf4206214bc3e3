package webhook

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// outcome is the result of one attempt, waiting to be written.
type outcome struct {
	d      delivery
	status int
	err    error
	at     time.Time // when the answer came (the lag metric's end, not the write's)
}

// maxRecordBatch bounds how many outcomes one write carries.
const maxRecordBatch = 512

// recordOutcomes writes the outcomes of attempts as they come in, until outcomes is closed and
// drained. It writes whatever has piled up while the previous write was in flight, so a busy
// worker pays one round trip per batch instead of one per event, and an idle one writes each
// outcome at once (no timer adds latency). done(n) is called after each write with its size.
func (w *Worker) recordOutcomes(outcomes <-chan outcome, done func(n int)) {
	batch := make([]outcome, 0, maxRecordBatch)
	for o := range outcomes {
		batch = append(batch[:0], o)
	drain:
		for len(batch) < maxRecordBatch {
			select {
			case o, ok := <-outcomes:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		w.record(batch)
		done(len(batch))
	}
}

// record writes a batch of outcomes: one statement for the delivered events (which also makes
// due the event each of them held back) and one for the failed ones, sent together. It does not
// use the worker's context: a shutdown still records the attempts that finished.
//
// attempts = the claimed count makes a row's write a no-op when its lease ran out and another
// worker has claimed the event again (it will deliver it: at least once). A batch never holds
// two events of one order: an order's next event is due only once this one's "delivered" is
// committed, so it cannot have been claimed, let alone attempted, before this write.
func (w *Worker) record(batch []outcome) {
	var okIDs []string
	var okAttempts, okStatus []int32
	var failIDs, failErr []string
	var failAttempts []int32
	var failStatus []*int32
	var failWaitMS []int64
	var failDead []bool
	for _, o := range batch {
		d := o.d
		if o.err == nil {
			metricDelivered.Inc()
			metricLag.Observe(o.at.Sub(d.event.At).Seconds())
			okIDs = append(okIDs, d.event.ID)
			okAttempts = append(okAttempts, int32(d.attempts))
			okStatus = append(okStatus, int32(o.status))
			continue
		}
		metricFailed.Inc()
		dead := d.attempts >= w.MaxAttempts
		if dead {
			metricDead.Inc()
			w.Log.Error("webhooks: event parked dead", "id", d.event.ID, "type", d.event.Type, "order_id", d.event.OrderID,
				"attempts", d.attempts, "err", o.err)
		}
		// A coarse outcome, not the error's text (attemptOutcome).
		msg := attemptOutcome(o.status, o.err)
		var st *int32
		if o.status != 0 {
			s := int32(o.status)
			st = &s
		}
		failIDs = append(failIDs, d.event.ID)
		failAttempts = append(failAttempts, int32(d.attempts))
		failStatus = append(failStatus, st)
		failErr = append(failErr, msg)
		failWaitMS = append(failWaitMS, w.retryAfter(d.attempts).Milliseconds())
		failDead = append(failDead, dead)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := &pgx.Batch{}
	if len(okIDs) > 0 {
		// Delivered, and each order's next event (blocked behind it) is due now.
		b.Queue(`WITH done AS (UPDATE webhook_deliveries d SET state = 'delivered', delivered_at = now(),
				last_status = o.status, last_error = NULL
			FROM unnest($1::text[], $2::int4[], $3::int4[]) AS o(id, attempts, status)
			WHERE d.id = o.id AND d.attempts = o.attempts AND d.state = 'pending' RETURNING d.order_id, d.seq)
			UPDATE webhook_deliveries n SET next_at = now() FROM done
			WHERE n.id = (SELECT x.id FROM webhook_deliveries x WHERE x.order_id = done.order_id AND x.seq > done.seq
				AND x.state = 'pending' ORDER BY x.seq LIMIT 1) AND n.next_at = `+blockedUntil, okIDs, okAttempts, okStatus)
	}
	if len(failIDs) > 0 {
		b.Queue(`UPDATE webhook_deliveries d SET next_at = now() + o.wait_ms * interval '1 millisecond',
			last_status = o.status, last_error = o.err, state = CASE WHEN o.dead THEN 'dead' ELSE 'pending' END
			FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::text[], $6::bool[]) AS o(id, attempts, wait_ms, status, err, dead)
			WHERE d.id = o.id AND d.attempts = o.attempts AND d.state = 'pending'`,
			failIDs, failAttempts, failWaitMS, failStatus, failErr, failDead)
	}
	// A batch locks many rows, so it can deadlock with another worker's batch or with unblock
	// (Postgres then aborts one of them): the write is repeatable (each row's guard is its state
	// and attempt count), so try again rather than let the leases run out and the events be sent
	// twice.
	var err error
	for try := 0; try < 3; try++ {
		// A fresh batch for each try: pgx keeps per-send state in the queued queries.
		again := &pgx.Batch{}
		for _, q := range b.QueuedQueries {
			again.Queue(q.SQL, q.Arguments...)
		}
		if err = w.Pool.SendBatch(ctx, again).Close(); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		// Nothing is lost: an unrecorded delivery is sent again, an unrecorded failure is retried
		// when its lease ends.
		w.Log.Warn("webhooks: recording outcomes failed; their leases will expire and they will be sent again",
			"events", len(batch), "err", err)
	}
}
