// Package baseline is the naive baselines: how flash sales are classically written, one order
// per request straight into Postgres. They exist only so the benchmark can compare them with the gate; they are off
// unless -baselines / SECKILL_BASELINES=1, served on the admin listener behind an admin token
// (they write orders past the gate's tokens, throttle and one-per-user), and they refuse a sale
// that is preheated in Redis: an order written behind the gate's back would break the
// invariants of a live sale (Redis stock and buyers no longer agree with Postgres).
//
// They sit apart from the product's packages so nothing of the backend depends on them; the
// backend mounts their two routes only when asked (Baselines.Mount).
package baseline

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
)

// Baselines buy straight in Postgres, past the gate.
type Baselines struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger
}

// Mount adds POST /baseline/pessimistic/{sale} and /baseline/optimistic/{sale} to mux, each
// behind guard (the backend passes its admin-only check).
func (s *Baselines) Mount(mux *http.ServeMux, guard func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("POST /baseline/pessimistic/{sale}", guard(s.handlePessimistic))
	mux.HandleFunc("POST /baseline/optimistic/{sale}", guard(s.handleOptimistic))
}

var errSoldOut = errors.New("sold out")
var errAlreadyBought = errors.New("already bought")

// handlePessimistic: SELECT ... FOR UPDATE on the sale row, then update and insert. Every buyer
// of a sale queues on one row lock.
func (s *Baselines) handlePessimistic(w http.ResponseWriter, r *http.Request) {
	s.baseline(w, r, func(ctx context.Context, tx pgx.Tx, sale, user, id string) error {
		var stock int
		if err := tx.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1 FOR UPDATE`, sale).Scan(&stock); err != nil {
			return err
		}
		if stock <= 0 {
			return errSoldOut
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM orders WHERE sale_id = $1 AND user_id = $2`, sale, user).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errAlreadyBought
		}
		if _, err := tx.Exec(ctx, `UPDATE sales SET stock = stock - 1 WHERE id = $1`, sale); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ($1, $2, $3, 'created', now())`, id, sale, user)
		return err
	})
}

// handleOptimistic: a conditional UPDATE ... WHERE stock > 0, then insert; the unique index
// refuses a second order of the same user (and rolls the unit back with the transaction).
func (s *Baselines) handleOptimistic(w http.ResponseWriter, r *http.Request) {
	s.baseline(w, r, func(ctx context.Context, tx pgx.Tx, sale, user, id string) error {
		tag, err := tx.Exec(ctx, `UPDATE sales SET stock = stock - 1 WHERE id = $1 AND stock > 0`, sale)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errSoldOut
		}
		_, err = tx.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ($1, $2, $3, 'created', now())`, id, sale, user)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return errAlreadyBought
		}
		return err
	})
}

func (s *Baselines) baseline(w http.ResponseWriter, r *http.Request, buy func(ctx context.Context, tx pgx.Tx, sale, user, id string) error) {
	user, ok := httpapi.UserFrom(w, r)
	if !ok {
		return
	}
	sale := r.PathValue("sale")
	if !contract.ValidID(sale) {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "invalid sale id")
		return
	}
	live, err := s.preheated(r.Context(), sale)
	if err != nil {
		s.Log.Warn("baseline: redis check failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	if live {
		httpapi.Refuse(w, http.StatusConflict, httpapi.CodeSalePreheated, "the sale is preheated in Redis: the gate sells it, the baselines may not")
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	err = pgx.BeginFunc(r.Context(), s.Pool, func(tx pgx.Tx) error { return buy(r.Context(), tx, sale, user, id) })
	switch {
	case err == nil:
		httpapi.WriteJSON(w, http.StatusAccepted, map[string]string{"order_id": id, "status": contract.StatusCreated})
	case errors.Is(err, errSoldOut):
		httpapi.Refuse(w, http.StatusConflict, contract.CodeSoldOut, "sold out")
	case errors.Is(err, errAlreadyBought):
		httpapi.Refuse(w, http.StatusConflict, contract.CodeAlreadyBought, "one per user")
	case errors.Is(err, pgx.ErrNoRows):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	default:
		s.Log.Warn("baseline purchase failed", "err", err)
		httpapi.Unavailable(w)
	}
}

// preheated reports whether the sale is loaded in Redis (its meta hash exists, or it is in the
// sales index that the relays read).
func (s *Baselines) preheated(ctx context.Context, sale string) (bool, error) {
	pipe := s.Redis.Pipeline()
	meta := pipe.Exists(ctx, contract.MetaKey(sale))
	idx := pipe.SIsMember(ctx, contract.SalesIndexKey, sale)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, err
	}
	return meta.Val() > 0 || idx.Val(), nil
}
