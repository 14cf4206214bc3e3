package lock

// The Locker over package redislock: lease renewed by its watchdog while held, fencing token
// per acquisition, released on return.

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/redislock"
)

type redisLocker struct {
	locks *redislock.Locker
	ttl   time.Duration
}

// NewLocker returns the backend's Locker over rdb with the given lease, renewed by redislock's
// watchdog while held. Its Redis keys start with contract.LockPrefix, given here rather than
// left to redislock's default: the backend's key names live in contract with its others.
func NewLocker(rdb redis.UniversalClient, ttl time.Duration) Locker {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return &redisLocker{locks: redislock.New(rdb, &redislock.LockerOptions{Prefix: contract.LockPrefix}), ttl: ttl}
}

func (l *redisLocker) TryObtain(ctx context.Context, name string) (Held, error) {
	lk, err := l.locks.TryObtain(ctx, name, &redislock.Options{TTL: l.ttl, Watchdog: true})
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, err
	}
	return lk, nil
}
