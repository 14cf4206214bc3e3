package orders

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
)

// Payment is the shop's word, not the buyer's: POST /shop/orders/{id}/paid on the admin
// listener, with a token of role shop only. An admin token may not confirm payments: the
// operators who run sales are not the ones who take money, and a leaked operator token must not
// be able to mark orders paid.

// Shop is the shop's side of an order: POST /shop/orders/{id}/paid (MarkPaid). Its route is
// mounted behind a shop-only token (backend/internal/auth.Guard.Shop).
type Shop struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
	// Webhooks delivers the order.paid event (nil: no delivery; the event is still recorded
	// for a sale with its own webhook_url).
	Webhooks *webhook.Worker
}

// MarkPaid's refusals: ErrNotPayable, the order may not be paid (409 not_payable);
// ErrUnknownOrder, no such order (404 unknown_order).
var (
	ErrNotPayable   = errors.New("not payable")
	ErrUnknownOrder = errors.New("unknown order")
)

// PaidResult is the body of POST /shop/orders/{id}/paid.
type PaidResult struct {
	OrderID string `json:"order_id"`
	SaleID  string `json:"sale_id"`
	Status  string `json:"status"`
	// Why is set on a refusal: the order's status, or "payment window closed".
	why string
}

// MarkPaid marks a created order paid and records its order.paid event in the same
// transaction. It is idempotent: an order already paid answers paid again. ErrNotPayable: the
// order is cancelled, failed, past its sale's pay_within, or not written yet (still queued);
// ErrUnknownOrder: no such order.
func (s *Shop) MarkPaid(ctx context.Context, id string) (PaidResult, error) {
	var res PaidResult
	if !contract.ValidID(id) {
		return res, ErrUnknownOrder
	}
	paid := false
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE orders o SET status = 'paid', updated_at = now()
			FROM sales s WHERE o.order_id = $1 AND o.status = 'created'
			AND s.id = o.sale_id AND o.created_at + s.pay_within > now()
			RETURNING o.order_id, o.sale_id, o.status`, id).Scan(&res.OrderID, &res.SaleID, &res.Status)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		paid = true
		return webhook.Enqueue(ctx, tx, contract.EventOrderPaid, []string{id}, s.Webhooks.HasDefaultURL())
	})
	if err != nil {
		return res, err
	}
	if paid {
		s.Webhooks.Wake()
		return res, nil
	}
	err = s.Pool.QueryRow(ctx, `SELECT order_id, sale_id, status FROM orders WHERE order_id = $1`, id).Scan(&res.OrderID, &res.SaleID, &res.Status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		queued, err := s.mayBeQueued(ctx, id)
		if err != nil {
			return res, err
		}
		if queued {
			return PaidResult{OrderID: id, Status: contract.StatusQueued, why: "the order is not written yet (still queued); pay once order.created arrives"}, ErrNotPayable
		}
		return PaidResult{}, ErrUnknownOrder
	case err != nil:
		return res, err
	case res.Status == contract.StatusPaid:
		return res, nil
	case res.Status == contract.StatusCreated:
		res.why = "the payment window of this order has closed"
	default:
		res.why = "the order is " + res.Status
	}
	return res, ErrNotPayable
}

// mayBeQueued reports whether id could be an order the gate accepted that is not in Postgres
// yet: a UUIDv7 whose time falls within some sale's window. The shop does not know the buyer,
// so Redis cannot be asked; such an id answers 409 not_payable rather than 404.
func (s *Shop) mayBeQueued(ctx context.Context, id string) (bool, error) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return false, nil
	}
	sec, nsec := u.Time().UnixTime()
	at := time.Unix(sec, nsec)
	var n int
	err = s.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM sales WHERE starts_at <= $1 AND ends_at >= $2 LIMIT 1) x`,
		at.Add(queuedWindow), at.Add(-queuedWindow)).Scan(&n)
	return n > 0, err
}

// HandlePaid answers POST /shop/orders/{id}/paid.
func (s *Shop) HandlePaid(w http.ResponseWriter, r *http.Request) {
	res, err := s.MarkPaid(r.Context(), r.PathValue("id"))
	switch {
	case err == nil:
		who, _ := httpapi.PrincipalFrom(r.Context())
		s.Log.Info("order paid", "order_id", res.OrderID, "sale_id", res.SaleID, "by", who.Name)
		httpapi.WriteJSON(w, http.StatusOK, res)
	case errors.Is(err, ErrUnknownOrder):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownOrder, "no such order")
	case errors.Is(err, ErrNotPayable):
		httpapi.Refuse(w, http.StatusConflict, contract.CodeNotPayable, res.why)
	default:
		s.Log.Warn("mark paid failed", "err", err)
		httpapi.Unavailable(w)
	}
}
