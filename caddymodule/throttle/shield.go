package throttle

import (
	"context"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// Shield is the coarse per-instance flood shield in front of Redis: ulule/limiter's in-memory
// fixed window, counting per key the requests this instance has admitted or still has in
// flight to Redis. A request the shield refuses never reaches Redis.
//
// Requests that end up refused are refunded, so the count is "admitted + in flight". Since a
// fixed window that started less than one window ago lies inside the sliding window that ends
// now, what this instance admitted in it is at most what the exact tier counts; with the
// shield's limit equal to the zone's limit it therefore only refuses requests the exact tier
// would refuse too, while bounding how many concurrent requests of one key can be in flight
// to Redis at once (a burst of 1 000 concurrent requests sends at most `limit` to Redis).
type Shield struct {
	store limiter.Store
	rate  limiter.Rate
}

// NewShield returns a shield admitting up to limit requests per window per key.
func NewShield(limit int, window time.Duration) *Shield {
	return &Shield{
		store: memory.NewStoreWithOptions(limiter.StoreOptions{
			Prefix:          "s",
			CleanUpInterval: max(window, time.Minute),
		}),
		rate: limiter.Rate{Period: window, Limit: int64(limit)},
	}
}

// Take counts one request for key. When the shield refuses it, Take has already undone the
// count and returns the time the shield's window resets.
func (s *Shield) Take(key string) (ok bool, reset time.Time) {
	c, _ := s.store.Increment(context.Background(), key, 1, s.rate) // the memory store never fails
	if c.Reached {
		s.Refund(key)
		return false, time.Unix(c.Reset, 0)
	}
	return true, time.Time{}
}

// Refund undoes one Take whose request was refused by the exact tier or by another zone.
func (s *Shield) Refund(key string) {
	_, _ = s.store.Increment(context.Background(), key, -1, s.rate)
}
