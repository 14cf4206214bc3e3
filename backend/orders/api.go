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
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
)

// OrderView is the body of GET /orders/{id}.
type OrderView struct {
	OrderID string `json:"order_id"`
	SaleID  string `json:"sale_id"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	// Variant ("" for a sale without variants) and Quantity (units) of an order in Postgres;
	// a queued order (not written yet) shows neither.
	Variant  string `json:"variant,omitempty"`
	Quantity int    `json:"quantity,omitempty"`
}

// API is the buyers' read of their orders, GET /orders/{id} on the order listener (the gateway
// proxies /orders/ there): in Postgres, or still queued in Redis.
type API struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger
}

// queuedWindow widens the search for the sale of a queued order around its acceptance time
// (clock skew between the gate's Redis TIME and Postgres).
const queuedWindow = 5 * time.Minute

// Lookup finds the user's order: in Postgres, or else still queued (accepted by the gate,
// not written yet). An order of another user is reported as not found.
//
// A queued order is not in Postgres, and the request names only the order id and the user.
// Order ids are UUIDv7: their first 48 bits are the acceptance time. The sales whose window
// contains that time (give or take queuedWindow) are the only ones the order can belong to; for
// each, HGET buyers <user> == order id decides. Usually that is one or two sales.
func (s *API) Lookup(ctx context.Context, user, id string) (OrderView, bool, error) {
	var v OrderView
	if !contract.ValidID(id) {
		return v, false, nil // no order id has other characters (UUIDs are hex and dashes)
	}
	var owner string
	var reason *string
	err := s.Pool.QueryRow(ctx, `SELECT sale_id, user_id, status, reason, variant_id, quantity FROM orders WHERE order_id = $1`, id).
		Scan(&v.SaleID, &owner, &v.Status, &reason, &v.Variant, &v.Quantity)
	if err == nil {
		if owner != user {
			return OrderView{}, false, nil
		}
		v.OrderID = id
		if reason != nil {
			v.Reason = *reason
		}
		return v, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return v, false, err
	}
	u, perr := uuid.Parse(id)
	if perr != nil || u.Version() != 7 {
		return OrderView{}, false, nil
	}
	sec, nsec := u.Time().UnixTime()
	at := time.Unix(sec, nsec)
	rows, err := s.Pool.Query(ctx, `SELECT id, shards FROM sales WHERE starts_at <= $1 AND ends_at >= $2 ORDER BY starts_at DESC LIMIT 50`,
		at.Add(queuedWindow), at.Add(-queuedWindow))
	if err != nil {
		return v, false, err
	}
	type saleRow struct {
		id     string
		shards int
	}
	sales, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (saleRow, error) {
		var x saleRow
		return x, r.Scan(&x.id, &x.shards)
	})
	if err != nil || len(sales) == 0 {
		return OrderView{}, false, err
	}
	pipe := s.Redis.Pipeline()
	cmds := make([]interface{ Val() string }, len(sales))
	for i, sale := range sales {
		// A sharded sale's buyer is in the user's shard.
		cmds[i] = pipe.HGet(ctx, contract.BuyersKey(contract.UserShardID(sale.id, user, sale.shards)), user)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return OrderView{}, false, err
	}
	for i, c := range cmds {
		if c.Val() == id {
			return OrderView{OrderID: id, SaleID: sales[i].id, Status: contract.StatusQueued}, true, nil
		}
	}
	return OrderView{}, false, nil
}

// HandleGet answers GET /orders/{id} for the user of X-User-ID.
func (s *API) HandleGet(w http.ResponseWriter, r *http.Request) {
	user, ok := httpapi.UserFrom(w, r)
	if !ok {
		return
	}
	v, found, err := s.Lookup(r.Context(), user, r.PathValue("id"))
	if err != nil {
		s.Log.Warn("order lookup failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	if !found {
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownOrder, "no such order for this user")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}
