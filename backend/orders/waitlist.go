package orders

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// DefaultOfferWindow is how long a waiter offered a released unit may buy it when the
// Waitlist sets none.
const DefaultOfferWindow = 2 * time.Minute

// Waitlist hands the units released in a sold-out room sale whose room has a waitlist
// (admin.RoomSpec.Waitlist; an unpaid order's timeout, a failed order) to the room's next
// present waiters, one offer each, and gives a unit back to the open pool only when nobody is
// left (lua/room_offer.lua; docs/room.md, "The waitlist"). Step runs after each compensation of a room sale and StepAll on every sweep:
// the script is idempotent, so any number of backends may run it at once.
//
// The shop hears of each offer (unit.offered) and of each that ended unbought (unit.passed);
// a bought one is an order like any other (order.created). The events are recorded from the
// waitlist's log in Redis under ids made of the offer itself, so a step whose recording failed
// or a backend that restarted records them again, never twice.
type Waitlist struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger
	// Webhooks delivers the unit events (nil: none are recorded).
	Webhooks *webhook.Worker
	// Window is how long an offered waiter may buy (0: DefaultOfferWindow).
	Window time.Duration
	// AnyWaiter offers to every waiter in turn; false (the default, as the gateways' presence
	// rule): only to waiters present when the offer is made.
	AnyWaiter bool

	mu       sync.Mutex
	recorded map[string]int64 // sale -> waitlist log elements whose events are recorded
}

// Step runs one sale's waitlist once: it settles the offers that ended, offers the held units to
// the next present waiters, gives back to the pool what nobody is left to take, and records
// the shop's events. A sale whose room has no waitlist ("waitlist": true in its room spec), or
// no longer in Redis, is left alone.
func (w *Waitlist) Step(ctx context.Context, sale string) (lua.RoomOfferResult, error) {
	paid, on := -1, false
	if err := w.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'paid'),
		COALESCE((SELECT room->>'waitlist' = 'true' FROM sales WHERE id = $1), false)`, sale).Scan(&paid, &on); err != nil {
		return lua.RoomOfferResult{}, err
	}
	if !on {
		return lua.RoomOfferResult{}, nil
	}
	window := w.Window
	if window <= 0 {
		window = DefaultOfferWindow
	}
	r, err := lua.RoomOfferCall{Sale: sale, Window: window, Paid: paid, AnyWaiter: w.AnyWaiter}.Run(ctx, w.Redis)
	if err != nil || !r.Room {
		return r, err
	}
	for _, e := range r.Events {
		metricOffers.WithLabelValues(e.Kind).Inc()
	}
	if r.Returned > 0 {
		metricOffers.WithLabelValues("returned").Add(float64(r.Returned))
		w.Log.Info("waitlist: units back in the pool, nobody left", "sale_id", sale, "units", r.Returned)
	}
	if err := w.record(ctx, sale); err != nil {
		w.Log.Warn("waitlist: events not recorded yet", "sale_id", sale, "err", err)
	}
	return r, nil
}

// StepAll runs Step for every room sale with a waitlist that is on (started, not ended a
// minute ago).
func (w *Waitlist) StepAll(ctx context.Context) error {
	rows, err := w.Pool.Query(ctx, `SELECT id FROM sales WHERE room->>'waitlist' = 'true'
		AND starts_at <= now() AND ends_at > now() - interval '1 minute' ORDER BY id`)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if _, err := w.Step(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// record turns the waitlist log's new elements into the shop's events: "o:" is unit.offered,
// "x:" unit.passed, each with the offer's end.
func (w *Waitlist) record(ctx context.Context, sale string) error {
	if w.Webhooks == nil {
		return nil
	}
	w.mu.Lock()
	from := w.recorded[sale]
	w.mu.Unlock()
	lg, err := w.Redis.LRange(ctx, contract.RoomOfferLogKey(sale), from, -1).Result()
	if err != nil || len(lg) == 0 {
		return err
	}
	var events []webhook.UnitEvent
	for _, s := range lg {
		p := strings.SplitN(s, ":", 4)
		if len(p) != 4 || (p[0] != "o" && p[0] != "x") {
			continue
		}
		until, err := strconv.ParseInt(p[2], 10, 64)
		if err != nil {
			continue
		}
		typ := contract.EventUnitOffered
		if p[0] == "x" {
			typ = contract.EventUnitPassed
		}
		events = append(events, webhook.UnitEvent{Type: typ, UserID: p[3], OfferUntil: time.UnixMilli(until)})
	}
	if len(events) > 0 {
		err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
			return webhook.EnqueueUnit(ctx, tx, sale, events, w.Webhooks.HasDefaultURL())
		})
		if err != nil {
			return err
		}
		w.Webhooks.Wake()
	}
	w.mu.Lock()
	if w.recorded == nil {
		w.recorded = map[string]int64{}
	}
	w.recorded[sale] = max(w.recorded[sale], from+int64(len(lg)))
	w.mu.Unlock()
	return nil
}
