package controls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/strictjson"
)

// Controls are the operator's controls of a sale and what they read and record: pause and
// resume, move the end, add or remove stock (journaled, idempotent per request id), the sales
// list and the audit trail. Each runs under the sale's lock with its Postgres side fenced.
type Controls struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger
	// Now is the clock.
	Now func() time.Time
	// Locker takes the sale's lock (lock.SaleKey).
	Locker lock.Locker
	// Retention keeps a sale's Redis keys this long after its end (a moved end moves it too).
	Retention time.Duration
	// Reconcile repairs a sale after an interrupted stock change (backend/reconcile).
	Reconcile func(ctx context.Context, sale string) (admin.ReconcileReport, error)
	// Stop, set by tests only, is asked at each point of a stock change between its two
	// stores; an error stops the change there, as a backend that stopped would.
	Stop func(step string) error
}

// ErrUnknownSale is returned for a sale Postgres does not know.
var ErrUnknownSale = errors.New("unknown sale")

// Operator controls (DESIGN.md "Operator controls", docs/operator.md): pause, resume, end,
// move the end, add or remove stock. Each runs under the sale's distributed lock (so controls,
// preheat, reconcile and rebalance of one sale never interleave), writes Redis first and
// Postgres last, and records an audit row in the transaction of its Postgres side: a control
// whose Redis step failed changed nothing the audit trail does not show, and running it again
// completes it.

// controlError is a refusal of a control: a status and a stable code.
type controlError struct {
	status int
	code   string
	msg    string
}

func (e *controlError) Error() string { return e.code + ": " + e.msg }

var (
	errSaleEnded     = &controlError{http.StatusConflict, "sale_ended", "the sale has ended: no control applies to it"}
	errAlreadyPaused = &controlError{http.StatusConflict, "already_paused", "the sale is paused already"}
	errNotPaused     = &controlError{http.StatusConflict, "not_paused", "the sale is not paused"}
	// ErrInsufficient refuses a removal of more units than are unsold (409 insufficient_stock).
	ErrInsufficient   = &controlError{http.StatusConflict, "insufficient_stock", "fewer unsold units than the removal asks for (stock stops at zero in Redis and in Postgres)"}
	errRequestReused  = &controlError{http.StatusConflict, "request_id_reused", "this request_id was used for another change"}
	errChangeRefused  = &controlError{http.StatusConflict, "insufficient_stock", "this request was refused before: fewer unsold units than it asked for"}
	errEndsAtInPast   = &controlError{http.StatusBadRequest, contract.CodeBadRequest, "ends_at must be in the future (POST /end ends a sale now)"}
	errEndsBeforeFrom = &controlError{http.StatusBadRequest, contract.CodeBadRequest, "ends_at must be after starts_at"}
)

// Refusals of a stock change that does not fit the sale's variants. A sale with variants keeps
// its units per variant: a change must name one (409, as before the variant field existed, so
// a client that knows no variants sees what it saw). A variant named on a sale without
// variants, or one the sale does not have, is a bad request (400 bad_request, as the gateway
// answers a purchase of an unknown variant).
var (
	errVariantStock   = &controlError{http.StatusConflict, "variant_sale", "the sale has variants: name the variant whose units change, {\"add\": N, \"request_id\": \"...\", \"variant\": \"<id>\"} (docs/operator.md)"}
	errNotVariantSale = &controlError{http.StatusBadRequest, contract.CodeBadRequest, "the sale has no variants: leave \"variant\" out"}
	errUnknownVariant = &controlError{http.StatusBadRequest, contract.CodeBadRequest, "the sale has no such variant (GET /admin/sales/{id} lists its variants)"}
)

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestID is the caller's X-Request-ID when it is well formed, a new UUIDv7 otherwise.
func requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-ID"); requestIDPattern.MatchString(v) {
		return v
	}
	return uuid.Must(uuid.NewV7()).String()
}

// who is the authenticated caller (the admin middleware put it in the context).
func who(ctx context.Context) httpapi.Principal {
	p, ok := httpapi.PrincipalFrom(ctx)
	if !ok {
		return httpapi.Principal{Name: "unknown", Role: httpapi.RoleAdmin}
	}
	return p
}

// control runs fn under the sale's lock with the sale as it is now; fn writes Redis and
// returns the Postgres side (run fenced, with the audit row) or nil when nothing changes.
func (ct *Controls) control(ctx context.Context, sale, action, reqID string,
	fn func(before admin.SaleSummary) (any, func(pgx.Tx) error, error)) (admin.ControlResult, error) {
	res := admin.ControlResult{Action: action, RequestID: reqID}
	key := lock.SaleKey(sale)
	err := lock.With(ctx, ct.Locker, lock.SaleKey(sale), 5*time.Second, func(held lock.Held) error {
		before, err := ct.saleSummary(ctx, ct.Pool, sale)
		if err != nil {
			return err
		}
		afterFields, write, err := fn(before)
		if err != nil {
			return err
		}
		if err := lock.Fenced(ctx, ct.Pool, key, held, func(tx pgx.Tx) error {
			if err := write(tx); err != nil {
				return err
			}
			after, err := ct.saleSummary(ctx, tx, sale)
			if err != nil {
				return err
			}
			res.Sale = after
			return writeAudit(ctx, tx, who(ctx), action, sale, reqID, auditView(action, before), afterFields)
		}); err != nil {
			return err
		}
		return nil
	})
	if err == nil {
		ct.Log.Info("sale control", "sale_id", sale, "action", action, "who", who(ctx).Name, "request_id", reqID)
	}
	return res, err
}

// auditView is the part of a sale an action changes, as the audit trail shows it.
func auditView(action string, sum admin.SaleSummary) map[string]any {
	switch action {
	case "pause", "resume":
		return map[string]any{"state": sum.State, "paused": sum.Paused}
	case "end", "move_end":
		return map[string]any{"state": sum.State, "starts_at": sum.StartsAt, "ends_at": sum.EndsAt}
	}
	return map[string]any{"state": sum.State, "initial_stock": sum.InitialStock, "stock_db": sum.StockDB, "stock_redis": sum.StockRedis}
}

// SetPaused pauses (paused true) or resumes a sale: the state field of every meta hash of the
// sale (a sharded sale's own and its shards'), a "paused:"/"resumed:" event, and Postgres's
// paused flag, which preheat writes back to Redis should Redis have lost the sale.
func (ct *Controls) SetPaused(ctx context.Context, sale string, paused bool, reqID string) (admin.ControlResult, error) {
	action, state, event := "resume", stateOpen, eventResumed
	if paused {
		action, state, event = "pause", statePaused, eventPaused
	}
	return ct.control(ctx, sale, action, reqID, func(before admin.SaleSummary) (any, func(pgx.Tx) error, error) {
		if before.State == admin.SaleEnded {
			return nil, nil, errSaleEnded
		}
		states, err := ct.redisStates(ctx, sale, before.Shards)
		if err != nil {
			return nil, nil, err
		}
		inRedis := 0
		for _, st := range states {
			if st == statePaused {
				inRedis++
			}
		}
		switch {
		case paused && before.Paused && inRedis == len(states):
			return nil, nil, errAlreadyPaused
		case !paused && !before.Paused && inRedis == 0:
			return nil, nil, errNotPaused
		}
		if _, err := ct.setState(ctx, sale, before.Shards, state, event); err != nil {
			return nil, nil, err
		}
		after := before
		after.Paused = paused
		after.State = stateOf(ct.Now(), after)
		return auditView(action, after), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE sales SET paused = $2 WHERE id = $1`, sale, paused)
			return err
		}, nil
	})
}

// MoveEnd sets a sale's end: ends_at in Postgres, ends_ms in every meta hash in Redis (the
// gate compares it with Redis TIME on every purchase, so every gateway obeys at once). With
// now true the sale ends now; a sale that has not started yet then gets its start moved to
// just before, so that it never opens.
func (ct *Controls) MoveEnd(ctx context.Context, sale string, endsAt time.Time, now bool, reqID string) (admin.ControlResult, error) {
	action := "move_end"
	if now {
		action = "end"
	}
	return ct.control(ctx, sale, action, reqID, func(before admin.SaleSummary) (any, func(pgx.Tx) error, error) {
		if before.State == admin.SaleEnded {
			return nil, nil, errSaleEnded
		}
		t := ct.Now()
		starts := before.StartsAt
		ends := endsAt.Truncate(time.Millisecond)
		if now {
			ends = t.Truncate(time.Millisecond)
			if !starts.Before(ends) {
				starts = ends.Add(-time.Millisecond)
			}
		} else {
			switch {
			case !ends.After(starts):
				return nil, nil, errEndsBeforeFrom
			case !ends.After(t):
				return nil, nil, errEndsAtInPast
			}
		}
		if err := ct.setWindow(ctx, sale, before.Shards, starts.UnixMilli(), ends.UnixMilli()); err != nil {
			return nil, nil, err
		}
		after := before
		after.StartsAt, after.EndsAt = starts, ends
		after.State = stateOf(t, after)
		return auditView(action, after), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE sales SET starts_at = $2, ends_at = $3 WHERE id = $1`, sale, starts, ends)
			return err
		}, nil
	})
}

// RestorePaused writes a paused sale's state into Redis after preheat loaded it (preheat.lua
// writes "open"), in the same lock and fenced transaction as the preheat.
func (ct *Controls) RestorePaused(ctx context.Context, tx pgx.Tx, sale string, shards int) error {
	var paused bool
	if err := tx.QueryRow(ctx, `SELECT paused FROM sales WHERE id = $1`, sale).Scan(&paused); err != nil || !paused {
		return err
	}
	_, err := ct.setState(ctx, sale, shards, statePaused, eventPaused)
	return err
}

func (ct *Controls) HandlePause(w http.ResponseWriter, r *http.Request) {
	res, err := ct.SetPaused(r.Context(), r.PathValue("id"), true, requestID(r))
	ct.answerControl(w, "pause", err, res)
}

func (ct *Controls) HandleResume(w http.ResponseWriter, r *http.Request) {
	res, err := ct.SetPaused(r.Context(), r.PathValue("id"), false, requestID(r))
	ct.answerControl(w, "resume", err, res)
}

func (ct *Controls) HandleEnd(w http.ResponseWriter, r *http.Request) {
	res, err := ct.MoveEnd(r.Context(), r.PathValue("id"), time.Time{}, true, requestID(r))
	ct.answerControl(w, "end", err, res)
}

// ParseEndsAt decodes the body of PATCH /admin/sales/{id}: {"ends_at": RFC 3339}.
func ParseEndsAt(r io.Reader) (time.Time, error) {
	var body struct {
		EndsAt *time.Time `json:"ends_at"`
	}
	if err := strictjson.Decode(r, &body); err != nil { // strict as ParseSaleSpec
		return time.Time{}, fmt.Errorf("body must be JSON {\"ends_at\": RFC 3339}: %w", err)
	}
	if body.EndsAt == nil || body.EndsAt.IsZero() {
		return time.Time{}, errors.New("ends_at (RFC 3339) is required")
	}
	return *body.EndsAt, nil
}

// handlePatchSale serves PATCH /admin/sales/{id} {"ends_at": RFC 3339}.
func (ct *Controls) HandlePatchSale(w http.ResponseWriter, r *http.Request) {
	endsAt, err := ParseEndsAt(http.MaxBytesReader(w, r.Body, 1<<12))
	if err != nil {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, err.Error())
		return
	}
	res, err := ct.MoveEnd(r.Context(), r.PathValue("id"), endsAt, false, requestID(r))
	if httpapi.RefuseBadValue(w, err, "ends_at") {
		ct.Log.Warn("move end: Postgres refused a value of the request", "err", err)
		return
	}
	ct.answerControl(w, "move end", err, res)
}

// answerControl answers a control: its refusal; 404 for an unknown sale; 409 busy while another
// instance holds the sale's lock (or fenced this one out); 503 otherwise.
func (ct *Controls) answerControl(w http.ResponseWriter, what string, err error, res any) {
	var ce *controlError
	switch {
	case errors.As(err, &ce):
		httpapi.Refuse(w, ce.status, ce.code, ce.msg)
	case err == nil:
		httpapi.WriteJSON(w, http.StatusOK, res)
	case errors.Is(err, ErrUnknownSale), errors.Is(err, reconcile.ErrUnknownSale):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	case errors.Is(err, lock.ErrBusy), errors.Is(err, lock.ErrFenced):
		httpapi.Refuse(w, http.StatusConflict, "busy", what+" is running on another instance; retry")
	default:
		ct.Log.Warn(what+" failed", "err", err)
		httpapi.Unavailable(w)
	}
}
