package caddymodule

import (
	"sync"

	"github.com/seckilledge/seckill/contract"
)

// ShardCounts remembers which sales are sharded (contract/shard.go) and into how many shards,
// as learned from the scripts' "sharded" answers. An unsharded sale is never stored, so it
// costs nothing; a sharded sale costs one extra round trip per instance, the first time.
//
// The shard count of a sale never changes (preheat writes it once, when the sale's meta hash
// is created), so the cache needs no invalidation except when a shard turns out to be gone
// (the sale expired or was recreated): Forget, and the next request learns it again.
type ShardCounts struct {
	m sync.Map // sale -> int (k > 1)
}

// Of returns the shard count of sale if it is known to be sharded, else 1. A nil
// *ShardCounts knows nothing and learns nothing.
func (c *ShardCounts) Of(sale string) int {
	if c == nil {
		return 1
	}
	if v, ok := c.m.Load(sale); ok {
		return v.(int)
	}
	return 1
}

// Learn records that sale has k shards. A k outside 2..contract.MaxShards is ignored.
func (c *ShardCounts) Learn(sale string, k int) {
	if c != nil && k > 1 && k <= contract.MaxShards {
		c.m.Store(sale, k)
	}
}

// Forget drops what is known of sale.
func (c *ShardCounts) Forget(sale string) {
	if c != nil {
		c.m.Delete(sale)
	}
}
