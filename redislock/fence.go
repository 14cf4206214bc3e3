package redislock

import (
	"context"
	"errors"
	"fmt"
)

// ErrFenced is returned by CheckFence when a newer fencing token of the lock was already
// recorded: the caller's holding is stale (its lease ran out, another holder has written
// since), so its transaction must roll back.
var ErrFenced = errors.New("redislock: fenced off by a newer lock holder")

// Execer is what CheckFence needs from the protected store: run one SQL statement (with $1,
// $2 parameters) inside the caller's transaction and say how many rows it changed. The
// package depends on no database driver; wrap yours with ExecFunc, e.g. for pgx:
//
//	redislock.ExecFunc(func(ctx context.Context, sql string, args ...any) (int64, error) {
//		tag, err := tx.Exec(ctx, sql, args...)
//		return tag.RowsAffected(), err
//	})
//
// and for database/sql, ExecContext and Result.RowsAffected.
type Execer interface {
	ExecAffected(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
}

// ExecFunc adapts a function to Execer.
type ExecFunc func(ctx context.Context, sql string, args ...any) (int64, error)

// ExecAffected calls f.
func (f ExecFunc) ExecAffected(ctx context.Context, sql string, args ...any) (int64, error) {
	return f(ctx, sql, args...)
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
	n, err := tx.ExecAffected(ctx, checkFenceSQL, key, token)
	if err != nil {
		return fmt.Errorf("redislock: check fence %q: %w", key, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: lock %q, token %d", ErrFenced, key, token)
	}
	return nil
}

// Fence is CheckFence for this holding: CheckFence(ctx, tx, l.Key(), l.Token()).
func (l *Lock) Fence(ctx context.Context, tx Execer) error {
	return CheckFence(ctx, tx, l.name, l.token)
}
