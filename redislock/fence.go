package redislock

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrFenced is returned by CheckFence when a newer fencing token of the lock was already
// recorded: the caller's holding is stale (its lease ran out, another holder has written
// since), so its transaction must roll back.
var ErrFenced = errors.New("redislock: fenced off by a newer lock holder")

// Execer is what CheckFence needs: pgx.Tx, *pgx.Conn and *pgxpool.Pool all qualify.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// FencesTableSQL creates the table CheckFence writes (the backend's migration has it).
const FencesTableSQL = `CREATE TABLE IF NOT EXISTS fences (
    lock_key   text PRIMARY KEY,
    token      bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
)`

const checkFenceSQL = `INSERT INTO fences (lock_key, token) VALUES ($1, $2)
ON CONFLICT (lock_key) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
WHERE fences.token <= EXCLUDED.token`

// CheckFence records token as the latest fencing token of the lock key, or returns ErrFenced
// when a larger token is already recorded. Call it inside the transaction whose writes the
// lock protects, before or after them but before COMMIT: the row lock it takes orders
// concurrent writers, so a stale holder either commits before the newer one records its
// token or is refused. Equal tokens pass (one holding may write many transactions; re-entries
// share the token).
func CheckFence(ctx context.Context, tx Execer, key string, token int64) error {
	tag, err := tx.Exec(ctx, checkFenceSQL, key, token)
	if err != nil {
		return fmt.Errorf("redislock: check fence %q: %w", key, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: lock %q, token %d", ErrFenced, key, token)
	}
	return nil
}

// Fence is CheckFence for this holding: CheckFence(ctx, tx, l.Key(), l.Token()).
func (l *Lock) Fence(ctx context.Context, tx Execer) error {
	return CheckFence(ctx, tx, l.name, l.token)
}
