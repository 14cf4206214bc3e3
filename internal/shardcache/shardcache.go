// Package shardcache remembers the shard counts of sales (contract/shard.go). The shard count
// of a sale never changes (preheat writes it once, when the sale's meta hash is created), so a
// remembered count never goes stale; it is only forgotten when a shard turns out to be gone
// (the sale expired or was recreated), and learnt again.
//
// The gateway learns counts from the scripts' "sharded" answers (Learn: only sharded sales are
// stored, an unsharded one costs nothing); the backend loads them from Postgres (Load).
package shardcache

import (
	"context"
	"sync"

	"github.com/seckilledge/seckill/contract"
)

// Counts is the cache. The zero value is ready; a nil *Counts knows nothing and learns
// nothing (Of, Learn and Forget only).
type Counts struct {
	m sync.Map // sale -> int (1..contract.MaxShards; 1 only from Load)
}

// Of returns the shard count of sale if it is known to be sharded, else 1.
func (c *Counts) Of(sale string) int {
	if c == nil {
		return 1
	}
	if v, ok := c.m.Load(sale); ok {
		return v.(int)
	}
	return 1
}

// Learn records that sale has k shards. A k outside 2..contract.MaxShards is ignored.
func (c *Counts) Learn(sale string, k int) {
	if c != nil && k > 1 && k <= contract.MaxShards {
		c.m.Store(sale, k)
	}
}

// Forget drops what is known of sale.
func (c *Counts) Forget(sale string) {
	if c != nil {
		c.m.Delete(sale)
	}
}

// Load returns the shard count of sale, asking load on a miss. load answers 0 for a sale it
// does not know: that is not remembered (a sale created later may be sharded) and reads 1.
// Any count it answers is remembered, 1 included, so an unsharded sale costs one load.
// Concurrent misses may call load more than once.
func (c *Counts) Load(ctx context.Context, sale string, load func(context.Context, string) (int, error)) (int, error) {
	if v, ok := c.m.Load(sale); ok {
		return v.(int), nil
	}
	k, err := load(ctx, sale)
	if err != nil {
		return 0, err
	}
	if k < 1 {
		return 1, nil
	}
	if k <= contract.MaxShards {
		c.m.Store(sale, k)
	}
	return k, nil
}
