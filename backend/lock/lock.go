// Package lock is the distributed lock that keeps the backend's singleton jobs (preheat,
// reconcile, rebalance and the stock changes of one sale; the unpaid-order sweeper) to one
// instance at a time, and the fence that refuses the Postgres writes of a holder that lost it.
// The jobs code against the small Locker interface; NewLocker is it over package redislock.
package lock

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/redislock"
)

// Locker obtains the distributed lock that keeps the singleton jobs (preheat and reconcile of
// one sale, the unpaid-order sweeper) to one backend instance at a time. The production
// implementation is package redislock (see redislock.go).
type Locker interface {
	// TryObtain takes the lock called name once, without waiting; ErrBusy when another
	// holder has it.
	TryObtain(ctx context.Context, name string) (Held, error)
}

// Held is an obtained lock.
type Held interface {
	// Token is the fencing token: it grows with every new holder of the key, so a write
	// carrying an older token than one already seen is refused (see CheckFence).
	Token() int64
	// Lost is closed when the lock was lost (expired before the watchdog could refresh it).
	Lost() <-chan struct{}
	Release(ctx context.Context) error
}

// ErrBusy means another instance holds the lock.
var ErrBusy = errors.New("lock held by another instance")

// ErrFenced means a write carried a fencing token older than one already recorded: a newer
// holder of the same lock has written since, so this holder must stop.
var ErrFenced = redislock.ErrFenced

// CheckFence records token as the newest seen for the lock name inside tx, or returns
// ErrFenced when a newer token was recorded already (redislock.CheckFence on the fences table).
func CheckFence(ctx context.Context, tx pgx.Tx, name string, token int64) error {
	return redislock.CheckFence(ctx, redislock.ExecFunc(func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := tx.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}), name, token)
}

// Lock names (redislock names: no braces; the lock's Redis keys are
// seckill:lock:{<name>} and seckill:lock:{<name>}:fence, contract.LockPrefix, and the name is
// the fences table's lock_key).
const SweeperKey = "sweeper"

// SaleKey is the lock of one sale's admin jobs.
func SaleKey(sale string) string { return "sale-admin:" + sale }

// With runs fn holding the lock called key, trying again for up to wait while another instance
// holds it (ErrBusy after that), and releases it when fn returns.
func With(ctx context.Context, l Locker, key string, wait time.Duration, fn func(Held) error) error {
	deadline := time.Now().Add(wait)
	for {
		held, err := l.TryObtain(ctx, key)
		if err == nil {
			defer func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				defer cancel()
				_ = held.Release(rctx)
			}()
			return fn(held)
		}
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Fenced runs fn in a transaction on pool that first records held's fencing token for key;
// fn's writes commit only if no newer holder of the lock has written.
func Fenced(ctx context.Context, pool *pgxpool.Pool, key string, held Held, fn func(pgx.Tx) error) error {
	select {
	case <-held.Lost():
		return errors.New("lock lost")
	default:
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := CheckFence(ctx, tx, key, held.Token()); err != nil {
			return err
		}
		return fn(tx)
	})
}
