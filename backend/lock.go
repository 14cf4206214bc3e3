package backend

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/redislock"
)

// Locker obtains the distributed lock that keeps the singleton jobs (preheat and reconcile of
// one sale, the unpaid-order sweeper) to one backend instance at a time. The production
// implementation is package redislock (see lock_redislock.go).
type Locker interface {
	// TryObtain takes the lock called name once, without waiting; ErrLockBusy when another
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

// ErrLockBusy means another instance holds the lock.
var ErrLockBusy = errors.New("lock held by another instance")

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
const sweeperLockKey = "sweeper"

func saleLockKey(sale string) string { return "sale-admin:" + sale }
