//go:build !seckill_redislock

package backend

// TEMPORARY: a minimal private lock until package redislock (branch lock) is merged. Then
// delete this file and remove the build constraint of lock_redislock_adapter.go, the adapter
// over redislock.TryObtain. Until then it implements only what the backend needs, with the same
// Redis keys as redislock (seckill:lock:{<name>}, seckill:lock:{<name>}:fence): SET NX PX with
// a random owner value, a watchdog that extends the lease while held, compare-and-delete
// release, and a fencing token from INCR on the fence key.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// tempLocker is the temporary Locker (see the file comment).
type tempLocker struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

// NewLocker returns the backend's Locker over rdb with the given lease.
func NewLocker(rdb redis.UniversalClient, ttl time.Duration) Locker {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return &tempLocker{rdb: rdb, ttl: ttl}
}

var (
	tempRefresh = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	tempRelease = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
)

func (l *tempLocker) TryObtain(ctx context.Context, name string) (Held, error) {
	key := "seckill:lock:{" + name + "}"
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	owner := hex.EncodeToString(b)
	ok, err := l.rdb.SetNX(ctx, key, owner, l.ttl).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrLockBusy
	}
	token, err := l.rdb.Incr(ctx, key+":fence").Result()
	if err != nil {
		_ = tempRelease.Run(ctx, l.rdb, []string{key}, owner).Err()
		return nil, err
	}
	h := &tempHeld{l: l, key: key, owner: owner, token: token, lost: make(chan struct{}), stop: make(chan struct{})}
	go h.watchdog()
	return h, nil
}

type tempHeld struct {
	l        *tempLocker
	key      string
	owner    string
	token    int64
	lost     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	lostOnce sync.Once
}

func (h *tempHeld) Token() int64          { return h.token }
func (h *tempHeld) Lost() <-chan struct{} { return h.lost }

func (h *tempHeld) watchdog() {
	t := time.NewTicker(h.l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), h.l.ttl/3)
			n, err := tempRefresh.Run(ctx, h.l.rdb, []string{h.key}, h.owner, h.l.ttl.Milliseconds()).Int64()
			cancel()
			if err != nil || n == 0 {
				h.lostOnce.Do(func() { close(h.lost) })
				return
			}
		}
	}
}

func (h *tempHeld) Release(ctx context.Context) error {
	h.stopOnce.Do(func() { close(h.stop) })
	n, err := tempRelease.Run(ctx, h.l.rdb, []string{h.key}, h.owner).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("lock was not held at release")
	}
	return nil
}
