package relay

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"go.uber.org/zap"
)

// scan finds the outboxes with entries among the sales index and the sales this instance
// served, keeping only the sales of the relay's namespace.
func (r *Relay) scan(ctx context.Context) {
	sales := map[string]bool{}
	var served []string
	r.served.Range(func(k, _ any) bool {
		sales[k.(string)] = true
		served = append(served, k.(string))
		r.served.Delete(k)
		return true
	})
	var members []string
	var err error
	if !r.cfg.ServedOnly {
		members, err = r.rdb.SMembers(ctx, contract.SalesIndexKey).Result()
	}
	if err != nil {
		if ctx.Err() == nil {
			r.logger.Debug("relay: sales index", zap.Error(err))
		}
	}
	for _, s := range members {
		// The index lists sales and the shards of sharded sales ("<sale>:<i>", each with its
		// own outbox and meta); a relay handles both the same way.
		if contract.ValidSaleOrShard(s) {
			sales[s] = true
		}
	}
	for s := range r.active { // keep what we had, whatever the index says
		sales[s] = true
	}
	if len(sales) == 0 {
		return
	}
	names := make([]string, 0, len(sales))
	lens := make([]*redis.IntCmd, 0, len(sales))
	spaces := make([]*redis.StringCmd, 0, len(sales))
	pipe := r.rdb.Pipeline()
	for s := range sales {
		names = append(names, s)
		lens = append(lens, pipe.XLen(ctx, contract.OutboxKey(s)))
		spaces = append(spaces, pipe.HGet(ctx, contract.MetaKey(s), contract.FieldNamespace))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		for _, s := range served { // not lost: the next scan looks at them again
			r.served.Store(s, struct{}{})
		}
		return // keep the previous active set
	}
	active := map[string]bool{}
	owned := make(map[string]bool, len(names))
	counts := map[string]int64{}
	for i, s := range names {
		// A sale without meta (or preheated without a namespace) belongs to the unnamed
		// deployment: HGET's nil reads "".
		mine := spaces[i].Val() == r.namespace
		owned[s] = mine
		n := lens[i].Val()
		if mine && n > 0 {
			counts[s] = n
			active[s] = true
			relayBacklog.WithLabelValues(s).Set(float64(n))
			r.backlog[s] = true
		} else if r.backlog[s] {
			relayBacklog.WithLabelValues(s).Set(0)
			delete(r.backlog, s)
		}
	}
	for s := range r.retryOwn {
		if !active[s] {
			delete(r.retryOwn, s)
		}
	}
	for s := range r.lastClaim {
		if !active[s] {
			delete(r.lastClaim, s)
		}
	}
	r.active, r.owned = active, owned
	r.mu.Lock()
	r.lastScan = counts
	r.mu.Unlock()
}

// servedUnknown reports whether a sale served since the last scan was not seen by it (its
// namespace is not known yet).
func (r *Relay) servedUnknown() bool {
	unknown := false
	r.served.Range(func(k, _ any) bool {
		_, seen := r.owned[k.(string)]
		unknown = !seen
		return !unknown
	})
	return unknown
}

// Backlog is the relay's view of the outboxes with entries (sale -> entries) as of its last
// scan, for the status page.
func (r *Relay) Backlog() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.lastScan))
	for s, n := range r.lastScan {
		out[s] = n
	}
	return out
}
