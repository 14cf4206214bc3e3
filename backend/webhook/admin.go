package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
)

// DeliveryView is one webhook event in GET /admin/webhooks and POST /admin/webhooks/{id}/replay.
type DeliveryView struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	OrderID     string     `json:"order_id"`
	SaleID      string     `json:"sale_id"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	At          time.Time  `json:"at"`
	NextAt      time.Time  `json:"next_at"`
	URL         string     `json:"url,omitempty"`
	LastStatus  *int       `json:"last_status,omitempty"`
	LastError   *string    `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

const deliveryColumns = `id, type, order_id, sale_id, state, attempts, at, next_at, COALESCE(url, ''), last_status, last_error, delivered_at`

func scanDelivery(r pgx.CollectableRow) (DeliveryView, error) {
	var d DeliveryView
	err := r.Scan(&d.ID, &d.Type, &d.OrderID, &d.SaleID, &d.State, &d.Attempts, &d.At, &d.NextAt, &d.URL, &d.LastStatus, &d.LastError, &d.DeliveredAt)
	return d, err
}

// ListDeliveries lists webhook events, newest first: of one state and one sale when given.
func (a *Admin) ListDeliveries(ctx context.Context, state, sale string, limit int) ([]DeliveryView, error) {
	rows, err := a.Pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE ($1 = '' OR state = $1) AND ($2 = '' OR sale_id = $2) ORDER BY seq DESC LIMIT $3`, state, sale, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanDelivery)
}

// Admin is the operator's side of the outbox: GET /admin/webhooks lists events, POST
// /admin/webhooks/{id}/replay puts a dead one back in the queue. The backend mounts its two
// handlers behind its own role checks.
type Admin struct {
	// Pool is the main pool (a replay is an operator's write, made with full durability).
	Pool *pgxpool.Pool
	// Worker is woken after a replay (nil: no worker in this process).
	Worker *Worker
	Log    *slog.Logger
}

var errPending = errors.New("already pending")

// ReplayDelivery puts a dead (or delivered) event back in the queue with a fresh count of
// attempts. The receiver may get it twice and dedupes it by id.
func (a *Admin) ReplayDelivery(ctx context.Context, id string) (DeliveryView, error) {
	rows, err := a.Pool.Query(ctx, `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_at = now(), delivered_at = NULL
		WHERE id = $1 AND state <> 'pending' RETURNING `+deliveryColumns, id)
	if err != nil {
		return DeliveryView{}, err
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDelivery)
	if errors.Is(err, pgx.ErrNoRows) {
		var state string
		if qerr := a.Pool.QueryRow(ctx, `SELECT state FROM webhook_deliveries WHERE id = $1`, id).Scan(&state); qerr == nil {
			return d, errPending
		}
		return d, errUnknownDelivery
	}
	if err == nil {
		a.Worker.Wake()
	}
	return d, err
}

var errUnknownDelivery = errors.New("unknown delivery")

// HandleList serves GET /admin/webhooks (?state=, ?sale=, ?limit=).
func (a *Admin) HandleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, sale := q.Get("state"), q.Get("sale")
	switch state {
	case "", "pending", "delivered", "dead":
	default:
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "state must be pending, delivered or dead")
		return
	}
	if sale != "" && !contract.ValidID(sale) {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "invalid sale id")
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, ok := httpapi.ParseLimit(v, 1000)
		if !ok {
			httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "limit must be 1..1000")
			return
		}
		limit = n
	}
	list, err := a.ListDeliveries(r.Context(), state, sale, limit)
	if err != nil {
		a.Log.Warn("list webhooks failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	if list == nil {
		list = []DeliveryView{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"deliveries": list})
}

// HandleReplay serves POST /admin/webhooks/{id}/replay.
func (a *Admin) HandleReplay(w http.ResponseWriter, r *http.Request) {
	d, err := a.ReplayDelivery(r.Context(), r.PathValue("id"))
	switch {
	case err == nil:
		who, _ := httpapi.PrincipalFrom(r.Context())
		a.Log.Info("webhook replayed", "id", d.ID, "order_id", d.OrderID, "by", who.Name)
		httpapi.WriteJSON(w, http.StatusOK, d)
	case errors.Is(err, errUnknownDelivery):
		httpapi.Refuse(w, http.StatusNotFound, httpapi.CodeUnknownDelivery, "no such webhook event")
	case errors.Is(err, errPending):
		httpapi.Refuse(w, http.StatusConflict, httpapi.CodeAlreadyPending, "the event is pending: it will be delivered")
	default:
		a.Log.Warn("replay webhook failed", "err", err)
		httpapi.Unavailable(w)
	}
}
