package caddymodule

import "github.com/seckilledge/seckill/internal/shardcache"

// ShardCounts remembers which sales are sharded (contract/shard.go) and into how many shards,
// as learned from the scripts' "sharded" answers. It is the cache the backend uses too
// (internal/shardcache); see there. A nil *ShardCounts knows nothing and learns nothing.
type ShardCounts = shardcache.Counts
