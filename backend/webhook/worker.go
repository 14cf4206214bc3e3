// Package webhook tells the shop about order changes: the outbox that every order change writes
// its event into, in the change's own transaction (Enqueue); the worker that delivers the events,
// signed, at least once and in order per order (Worker); the guard on where it may connect
// (CheckURL, the dialer); and the operator's list and replay (Admin).
//
// It knows nothing of sales, orders or the consumer: they call Enqueue and Wake. A draw's
// events (draw.won, draw.lost, draw.expired) go the same way: the draw calls EnqueueDraw, and
// the worker sends them as contract.DrawEvent (draw.go). Its tables are in
// backend/internal/schema (004_webhooks.sql, 009_draws.sql).
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend/internal/backoff"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/egress"
)

// Worker delivers the events of the webhook outbox (outbox.go) to the shop: at least
// once, in order per order, signed (contract.SignWebhook), with exponential backoff and jitter,
// parking an event as dead after MaxAttempts.
//
// Claiming is a lease in Postgres: one statement picks due events FOR UPDATE SKIP LOCKED, moves
// their next_at past the lease and counts the attempt, and commits. So several backend instances
// share the work without a coordinator, no transaction stays open during an HTTP call, and the
// events of an instance killed mid-delivery come back when their lease runs out. An event is
// due only when every earlier event of its order is delivered: a later event never overtakes
// an earlier one, even across instances (the earlier one, leased or waiting for its retry, is
// still pending and holds the later ones back).
type Worker struct {
	// Pool is the worker's own pool (NewPool): its commits skip the WAL flush.
	Pool *pgxpool.Pool
	Log  *slog.Logger
	// DefaultURL receives the events of sales without their own webhook_url ("" : those sales
	// have no events).
	DefaultURL string
	// Secrets sign every request, the first one first; each gives the header a v1 entry, so a
	// receiver that knows any of them accepts it (rotation: new,old).
	Secrets []string
	// Timeout bounds one HTTP attempt (default 10s). The lease is Timeout + 5s.
	Timeout time.Duration
	// RetryMin and RetryMax bound the backoff between attempts (default 1s and 10m): the n-th
	// retry waits a random time in [d/2, d] with d = min(RetryMax, RetryMin * 2^(n-1)).
	RetryMin, RetryMax time.Duration
	// MaxAttempts is how many attempts an event gets before it is parked dead (default 15).
	MaxAttempts int
	// Concurrency is how many requests are in flight at once per instance (default 16).
	Concurrency int
	// Poll is how often the worker looks for due events when it has nothing to do (default
	// 200ms); a change made by this instance wakes it at once.
	Poll time.Duration
	// Allow lists the prefixes inside that webhook URLs may point at anyway
	// (SECKILL_WEBHOOK_ALLOW_CIDRS, e.g. 127.0.0.1/32 for the demo's receiver): an address
	// internal/egress refuses and no prefix here holds is refused when a URL is set (CheckURL)
	// and every dial to it fails as "blocked". Link-local and metadata addresses are refused
	// whatever it lists.
	Allow []netip.Prefix
	// Resolver looks up the names of webhook URLs when they are set (CheckURL; nil:
	// net.DefaultResolver). The dial resolves on its own and is checked on its own.
	Resolver egress.Resolver
	// Client sends the requests (default: newClient, keep-alive, no redirects, every dial
	// checked against Allow). A Client given here replaces the check too.
	Client *http.Client

	once sync.Once
	wake chan struct{}
}

func (w *Worker) init() {
	w.once.Do(func() {
		w.wake = make(chan struct{}, 1)
		if w.Timeout <= 0 {
			w.Timeout = 10 * time.Second
		}
		if w.RetryMin <= 0 {
			w.RetryMin = time.Second
		}
		if w.RetryMax < w.RetryMin {
			w.RetryMax = max(10*time.Minute, w.RetryMin)
		}
		if w.MaxAttempts <= 0 {
			w.MaxAttempts = 15
		}
		if w.Concurrency <= 0 {
			w.Concurrency = 16
		}
		if w.Poll <= 0 {
			w.Poll = 200 * time.Millisecond
		}
		if w.Client == nil {
			w.Client = newClient(w.Timeout, w.Concurrency, egress.Policy{Allow: w.Allow})
		}
	})
}

// NewPool opens the worker's pool: conns connections with synchronous_commit off. The
// worker's writes are bookkeeping that a crash may lose safely: a lost claim is claimed again
// when its lease ends, a lost failure is retried sooner, a lost "delivered" sends the event once
// more (the receiver dedupes by id). Skipping the flush makes each of them about ten times
// cheaper on a busy disk (6.8 ms against 0.6 ms per commit here). The events themselves are
// written by the order changes, on the main pool, with full durability.
func NewPool(ctx context.Context, url string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	// The claim must walk the due index in (next_at, seq) order and stop at its LIMIT. Its
	// next_at <= now() lies past the histogram of the last ANALYZE (new events are always
	// newer), so the planner expects a dozen due rows and picks a bitmap scan that reads,
	// anti-joins and sorts the whole backlog on every claim: 11-17 ms at a 1 200-event backlog
	// against 1 ms for the ordered walk, and slower the longer the queue (measured,
	// BENCHMARKS.md "Webhooks"). This pool runs only the worker's statements, all by index.
	cfg.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
	cfg.MaxConns = int32(max(conns, 2))
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Wake tells the worker that events were written (it looks at once instead of at its next poll).
func (w *Worker) Wake() {
	if w == nil {
		return
	}
	w.init()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) lease() time.Duration { return w.Timeout + 5*time.Second }

// delivery is one claimed event.
type delivery struct {
	// event holds the fields every event has; an order event is sent as it is.
	event contract.WebhookEvent
	// draw holds what a draw event adds (its variant is the entry's); nil for an order event.
	draw     *drawFields
	url      string
	attempts int
}

// drawFields are the columns of a draw event (009_draws.sql).
type drawFields struct {
	entryID, variant string
	wave             *int
	claimUntil       *time.Time
}

// body is the JSON the receiver gets: a contract.UnitEvent for a waitlist event (its offer's
// end in claim_until), a contract.DrawEvent for a draw event, else the
// contract.WebhookEvent (unchanged by draws, byte for byte).
func (d delivery) body() ([]byte, error) {
	if contract.IsUnitEvent(d.event.Type) && d.draw != nil && d.draw.claimUntil != nil {
		return json.Marshal(contract.UnitEvent{ID: d.event.ID, Version: contract.WebhookEventVersion, Type: d.event.Type,
			SaleID: d.event.SaleID, UserID: d.event.UserID, OfferUntil: d.draw.claimUntil.UTC(), At: d.event.At})
	}
	if d.draw == nil {
		ev := d.event
		ev.Version = contract.WebhookEventVersion
		return json.Marshal(ev)
	}
	ev := contract.DrawEvent{ID: d.event.ID, Version: contract.WebhookEventVersion, Type: d.event.Type, SaleID: d.event.SaleID, UserID: d.event.UserID,
		EntryID: d.draw.entryID, Variant: d.draw.variant, At: d.event.At}
	if d.draw.wave != nil {
		ev.Wave = *d.draw.wave
	}
	if d.draw.claimUntil != nil {
		ev.ClaimUntil = ptrTime(d.draw.claimUntil.UTC())
	}
	return json.Marshal(ev)
}

func ptrTime(t time.Time) *time.Time { return &t }

// claim leases up to n due events.
func (w *Worker) claim(ctx context.Context, n int) ([]delivery, error) {
	rows, err := w.Pool.Query(ctx, `UPDATE webhook_deliveries d SET next_at = now() + $2::interval, attempts = d.attempts + 1
		FROM (SELECT c.id FROM webhook_deliveries c
			WHERE c.state = 'pending' AND c.next_at <= now()
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e
				WHERE e.order_id = c.order_id AND e.seq < c.seq AND e.state <> 'delivered')
			ORDER BY c.next_at, c.seq LIMIT $1 FOR UPDATE SKIP LOCKED) due
		WHERE d.id = due.id
		RETURNING d.id, d.type, d.order_id, d.sale_id, d.user_id, d.at, COALESCE(d.url, ''), d.attempts,
			COALESCE((SELECT o.variant_id FROM orders o WHERE o.order_id = d.order_id), ''),
			COALESCE((SELECT o.quantity FROM orders o WHERE o.order_id = d.order_id), 1),
			COALESCE(d.entry_id, ''), COALESCE(d.variant, ''), d.wave, d.claim_until`, n, w.lease())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (delivery, error) {
		var d delivery
		var df drawFields
		err := r.Scan(&d.event.ID, &d.event.Type, &d.event.OrderID, &d.event.SaleID, &d.event.UserID, &d.event.At, &d.url, &d.attempts,
			&d.event.Variant, &d.event.Quantity, &df.entryID, &df.variant, &df.wave, &df.claimUntil)
		d.event.At = d.event.At.UTC()
		if contract.IsDrawEvent(d.event.Type) || contract.IsUnitEvent(d.event.Type) {
			d.draw = &df
		}
		if d.url == "" {
			d.url = w.DefaultURL
		}
		return d, err
	})
}

// Run delivers events until ctx ends; the requests in flight then finish (each within Timeout)
// and their outcome is recorded before Run returns.
//
// Concurrency bounds the requests in flight; the outcomes of finished requests are written in
// batches by recordOutcomes, alongside the next requests.
func (w *Worker) Run(ctx context.Context) {
	w.init()
	if len(w.Secrets) == 0 {
		w.Log.Warn("webhooks: no signing secret (SECKILL_WEBHOOK_SECRETS); no event will be delivered")
		return
	}
	slots := make(chan struct{}, w.Concurrency)
	freed := make(chan struct{}, 1)
	// Finished attempts wait here for their outcome to be written; their events stay leased
	// meanwhile, so an order's next event is not due before its predecessor's "delivered" is
	// written. The buffer lets the requests go on while a write is in flight.
	outcomes := make(chan outcome, maxRecordBatch)
	recorded := make(chan struct{})
	wakeClaim := func() {
		select {
		case freed <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(recorded)
		// A recorded delivery may have made its order's next event due.
		w.recordOutcomes(outcomes, func(int) {
			if len(slots) <= w.Concurrency*3/4 {
				wakeClaim()
			}
		})
	}()
	var inflight sync.WaitGroup
	defer func() {
		inflight.Wait()
		close(outcomes)
		<-recorded
	}()
	bo := backoff.New(100*time.Millisecond, 5*time.Second)
	lagTick := time.NewTicker(5 * time.Second)
	defer lagTick.Stop()
	w.observeLag(ctx)
	for ctx.Err() == nil {
		free := w.Concurrency - len(slots)
		var wait <-chan time.Time
		if free > 0 {
			ds, err := w.claim(ctx, free)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				d := bo.Next()
				w.Log.Warn("webhooks: claim failed; retrying", "err", err, "in", d.String())
				wait = time.After(d)
			} else {
				bo.Reset()
				for _, d := range ds {
					slots <- struct{}{}
					inflight.Add(1)
					go func() {
						defer inflight.Done()
						status, err := w.post(d)
						outcomes <- outcome{d: d, status: status, err: err, at: time.Now()}
						<-slots
						// Claim again once a quarter of the slots are free: one claim per
						// freed slot would cost a query per event.
						if len(slots) <= w.Concurrency*3/4 {
							wakeClaim()
						}
					}()
				}
				if len(ds) == free {
					continue // more may be due
				}
			}
		}
		if wait == nil {
			wait = time.After(w.Poll)
		}
		select {
		case <-ctx.Done():
		case <-freed: // a delivered event may have made its order's next one due
		case <-w.wake:
		case <-wait:
		case <-lagTick.C:
			w.observeLag(ctx)
			w.unblock(ctx)
		}
	}
}

// retryAfter is the wait after the n-th failed attempt: exponential, with jitter so that the
// events of a receiver that was down do not all come back in the same instant.
func (w *Worker) retryAfter(n int) time.Duration {
	d := w.RetryMax
	if n < 40 {
		if e := w.RetryMin << (n - 1); e > 0 && e < d {
			d = e
		}
	}
	return d/2 + rand.N(d/2+1)
}

// post sends one attempt: the status and nil for a 2xx answer, an error otherwise.
func (w *Worker) post(d delivery) (int, error) {
	if d.url == "" {
		return 0, errNoWebhookURL
	}
	body, err := d.body()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seckill-backend")
	req.Header.Set("Idempotency-Key", d.event.ID)
	// Signed twice with the same secrets at the same time: Seckill-Signature (contract.VerifyWebhook)
	// and the Standard Webhooks headers (webhook-id is the event's id), for the shops that
	// verify with that specification's libraries.
	now := time.Now()
	req.Header.Set(contract.SignatureHeader, contract.SignWebhook(w.Secrets, now, body))
	contract.SignStandardWebhook(req.Header, w.Secrets, d.event.ID, now, body)
	resp, err := w.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Read a little of the answer so the connection can be reused; the rest is not ours.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// unblock makes due the blocked events whose order has nothing undelivered before them: a
// release that raced with the insert of the event it should release (the inserting
// transaction saw the earlier event undelivered; the delivery did not see the new event yet).
func (w *Worker) unblock(ctx context.Context) {
	_, err := w.Pool.Exec(ctx, `UPDATE webhook_deliveries d SET next_at = now()
		WHERE d.state = 'pending' AND d.next_at = `+blockedUntil+` AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e
			WHERE e.order_id = d.order_id AND e.seq < d.seq AND e.state <> 'delivered')`)
	if err != nil && ctx.Err() == nil {
		w.Log.Warn("webhooks: unblock failed", "err", err)
	}
}

// observeLag sets the gauge of the oldest pending event's age.
func (w *Worker) observeLag(ctx context.Context) {
	var age float64
	err := w.Pool.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(at)), 0)::float8
		FROM webhook_deliveries WHERE state = 'pending'`).Scan(&age)
	if err == nil {
		metricOldest.Set(age)
	}
}

// MinSecretLength is the shortest webhook signing secret the backend accepts: a short secret is
// guessable.
const MinSecretLength = 16

// ParseSecrets reads SECKILL_WEBHOOK_SECRETS ("new,old"): at least one when webhooks are used,
// each at least MinSecretLength characters.
func ParseSecrets(list string) ([]string, error) {
	var out []string
	for _, s := range bytes.Split([]byte(list), []byte(",")) {
		s = bytes.TrimSpace(s)
		if len(s) == 0 {
			continue
		}
		if len(s) < MinSecretLength {
			return nil, fmt.Errorf("SECKILL_WEBHOOK_SECRETS entry %d is shorter than %d characters", len(out)+1, MinSecretLength)
		}
		// A secret in the Standard Webhooks form is its base64 key: at least MinSecretLength
		// bytes of it, and valid base64 (a typo would sign with nothing anyone holds).
		if bytes.HasPrefix(s, []byte(contract.StandardSecretPrefix)) {
			key, err := contract.WebhookKey(string(s))
			if err != nil || len(key) < MinSecretLength {
				return nil, fmt.Errorf("SECKILL_WEBHOOK_SECRETS entry %d: a %s secret must be standard base64 of at least %d bytes", len(out)+1, contract.StandardSecretPrefix, MinSecretLength)
			}
		}
		out = append(out, string(s))
	}
	if len(out) > 4 {
		return nil, errors.New("SECKILL_WEBHOOK_SECRETS: at most 4 secrets (" + strconv.Itoa(len(out)) + " given)")
	}
	return out, nil
}
