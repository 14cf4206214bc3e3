package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/strictjson"
)

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
	errSaleEnded      = &controlError{http.StatusConflict, "sale_ended", "the sale has ended: no control applies to it"}
	errAlreadyPaused  = &controlError{http.StatusConflict, "already_paused", "the sale is paused already"}
	errNotPaused      = &controlError{http.StatusConflict, "not_paused", "the sale is not paused"}
	errInsufficient   = &controlError{http.StatusConflict, "insufficient_stock", "fewer unsold units than the removal asks for (stock stops at zero in Redis and in Postgres)"}
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
func (s *Service) control(ctx context.Context, sale, action, reqID string,
	fn func(before admin.SaleSummary) (any, func(pgx.Tx) error, error)) (admin.ControlResult, error) {
	res := admin.ControlResult{Action: action, RequestID: reqID}
	key := lock.SaleKey(sale)
	err := s.withSaleLock(ctx, sale, 5*time.Second, func(held lock.Held) error {
		before, err := s.saleSummary(ctx, s.Pool, sale)
		if err != nil {
			return err
		}
		afterFields, write, err := fn(before)
		if err != nil {
			return err
		}
		if err := s.fenced(ctx, key, held, func(tx pgx.Tx) error {
			if err := write(tx); err != nil {
				return err
			}
			after, err := s.saleSummary(ctx, tx, sale)
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
		s.Log.Info("sale control", "sale_id", sale, "action", action, "who", who(ctx).Name, "request_id", reqID)
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
func (s *Service) SetPaused(ctx context.Context, sale string, paused bool, reqID string) (admin.ControlResult, error) {
	action, state, event := "resume", stateOpen, eventResumed
	if paused {
		action, state, event = "pause", statePaused, eventPaused
	}
	return s.control(ctx, sale, action, reqID, func(before admin.SaleSummary) (any, func(pgx.Tx) error, error) {
		if before.State == admin.SaleEnded {
			return nil, nil, errSaleEnded
		}
		states, err := s.redisStates(ctx, sale, before.Shards)
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
		if _, err := s.setState(ctx, sale, before.Shards, state, event); err != nil {
			return nil, nil, err
		}
		after := before
		after.Paused = paused
		after.State = stateOf(s.now(), after)
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
func (s *Service) MoveEnd(ctx context.Context, sale string, endsAt time.Time, now bool, reqID string) (admin.ControlResult, error) {
	action := "move_end"
	if now {
		action = "end"
	}
	return s.control(ctx, sale, action, reqID, func(before admin.SaleSummary) (any, func(pgx.Tx) error, error) {
		if before.State == admin.SaleEnded {
			return nil, nil, errSaleEnded
		}
		t := s.now()
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
		if err := s.setWindow(ctx, sale, before.Shards, starts.UnixMilli(), ends.UnixMilli()); err != nil {
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

// restorePaused writes a paused sale's state into Redis after preheat loaded it (preheat.lua
// writes "open"), in the same lock and fenced transaction as the preheat.
func (s *Service) restorePaused(ctx context.Context, tx pgx.Tx, sale string, shards int) error {
	var paused bool
	if err := tx.QueryRow(ctx, `SELECT paused FROM sales WHERE id = $1`, sale).Scan(&paused); err != nil || !paused {
		return err
	}
	_, err := s.setState(ctx, sale, shards, statePaused, eventPaused)
	return err
}

func (s *Service) handlePause(w http.ResponseWriter, r *http.Request) {
	res, err := s.SetPaused(r.Context(), r.PathValue("id"), true, requestID(r))
	s.answerControl(w, "pause", err, res)
}

func (s *Service) handleResume(w http.ResponseWriter, r *http.Request) {
	res, err := s.SetPaused(r.Context(), r.PathValue("id"), false, requestID(r))
	s.answerControl(w, "resume", err, res)
}

func (s *Service) handleEnd(w http.ResponseWriter, r *http.Request) {
	res, err := s.MoveEnd(r.Context(), r.PathValue("id"), time.Time{}, true, requestID(r))
	s.answerControl(w, "end", err, res)
}

// parseEndsAt decodes the body of PATCH /admin/sales/{id}: {"ends_at": RFC 3339}.
func parseEndsAt(r io.Reader) (time.Time, error) {
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
func (s *Service) handlePatchSale(w http.ResponseWriter, r *http.Request) {
	endsAt, err := parseEndsAt(http.MaxBytesReader(w, r.Body, 1<<12))
	if err != nil {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, err.Error())
		return
	}
	res, err := s.MoveEnd(r.Context(), r.PathValue("id"), endsAt, false, requestID(r))
	if httpapi.RefuseBadValue(w, err, "ends_at") {
		s.Log.Warn("move end: Postgres refused a value of the request", "err", err)
		return
	}
	s.answerControl(w, "move end", err, res)
}

// answerControl answers a control: its refusal, or as answerLocked does.
func (s *Service) answerControl(w http.ResponseWriter, what string, err error, res any) {
	var ce *controlError
	if errors.As(err, &ce) {
		httpapi.Refuse(w, ce.status, ce.code, ce.msg)
		return
	}
	s.answerLocked(w, what, err, res)
}

// mountControls adds the operator routes to mux: the controls (admin tokens), the sales list
// and the audit trail (viewer tokens too) and the live page (backend/ui). Everything is
// under /admin/, so it follows the admin API to whichever listener serves it.
func (s *Service) mountControls(mux *http.ServeMux, reg *prometheus.Registry) {
	mux.HandleFunc("GET /admin/sales", s.viewer(s.handleListSales))
	mux.HandleFunc("POST /admin/sales/{id}/pause", s.admin(s.handlePause))
	mux.HandleFunc("POST /admin/sales/{id}/resume", s.admin(s.handleResume))
	mux.HandleFunc("POST /admin/sales/{id}/end", s.admin(s.handleEnd))
	mux.HandleFunc("PATCH /admin/sales/{id}", s.admin(s.handlePatchSale))
	mux.HandleFunc("POST /admin/sales/{id}/stock", s.admin(s.handleStock))
	mux.HandleFunc("GET /admin/audit", s.viewer(s.handleAudit))
	s.cockpit().Mount(mux, reg)
}
