package backend

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/seckilledge/seckill/contract"
)

// The naive baselines: how flash sales are classically written, one order per request straight
// into Postgres. They exist only so the benchmark can compare them with the gate; they are off
// unless -baselines / SECKILL_BASELINES=1.

var errSoldOut = errors.New("sold out")
var errAlreadyBought = errors.New("already bought")

// handlePessimistic: SELECT ... FOR UPDATE on the sale row, then update and insert. Every buyer
// of a sale queues on one row lock.
func (s *Service) handlePessimistic(w http.ResponseWriter, r *http.Request) {
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
func (s *Service) handleOptimistic(w http.ResponseWriter, r *http.Request) {
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

func (s *Service) baseline(w http.ResponseWriter, r *http.Request, buy func(ctx context.Context, tx pgx.Tx, sale, user, id string) error) {
	user, ok := s.userFrom(w, r)
	if !ok {
		return
	}
	sale := r.PathValue("sale")
	if !contract.ValidID(sale) {
		refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "invalid sale id")
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	err := pgx.BeginFunc(r.Context(), s.Pool, func(tx pgx.Tx) error { return buy(r.Context(), tx, sale, user, id) })
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, map[string]string{"order_id": id, "status": contract.StatusCreated})
	case errors.Is(err, errSoldOut):
		refuse(w, http.StatusConflict, contract.CodeSoldOut, "sold out")
	case errors.Is(err, errAlreadyBought):
		refuse(w, http.StatusConflict, contract.CodeAlreadyBought, "one per user")
	case errors.Is(err, pgx.ErrNoRows):
		refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	default:
		s.Log.Warn("baseline purchase failed", "err", err)
		unavailable(w)
	}
}
