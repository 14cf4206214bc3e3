package contract

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Hot-sale stock sharding (docs/scaling.md, "Hot-sale stock sharding").
//
// A sharded sale splits its stock over K shards. Shard i of sale <id> is addressed by the
// shard id "<id>:<i>" and has the same keys as a sale, built by the same functions:
// MetaKey(ShardID(id, i)) is seckill:{sale:<id>:<i>}:meta, so each shard has its own hash tag
// (its own slot, spread over the masters of a Redis Cluster) and the gate script runs on one
// shard's keys unchanged. A sale id never contains ':', so a shard id never names a sale.
//
// The sale's own meta hash (MetaKey(id)) keeps its window and the field "shards" = K, and a
// stock of 0: it is how gateways learn that the sale is sharded (the gate script answers
// "sharded" instead of deciding). An unsharded sale (K = 1, the default) has no "shards"
// field and exactly the keys it always had.

// FieldShards is the meta hash field holding the shard count of a sharded sale.
const FieldShards = "shards"

// MaxShards bounds K: enough to spread one sale over any practical cluster, small enough that
// the per-shard metrics labels and the backend's per-shard loops stay cheap.
const MaxShards = 64

// ShardID is the id of shard i of sale: "<sale>:<i>".
func ShardID(sale string, i int) string { return sale + ":" + strconv.Itoa(i) }

// ShardIDs lists the shard ids of a sale with k shards; for k <= 1, the sale itself.
func ShardIDs(sale string, k int) []string {
	if k <= 1 {
		return []string{sale}
	}
	ids := make([]string, k)
	for i := range ids {
		ids[i] = ShardID(sale, i)
	}
	return ids
}

// SplitShardID splits a shard id into its sale and shard number. ok is false for anything
// else, including a plain sale id.
func SplitShardID(id string) (sale string, shard int, ok bool) {
	sale, num, found := strings.Cut(id, ":")
	if !found || !ValidID(sale) || len(num) == 0 || len(num) > 2 {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n >= MaxShards || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return sale, n, true
}

// ValidSaleOrShard reports whether id is a sale id or a shard id.
func ValidSaleOrShard(id string) bool {
	if ValidID(id) {
		return true
	}
	_, _, ok := SplitShardID(id)
	return ok
}

// BaseSale returns the sale a sale-or-shard id belongs to: the sale of a shard id, id itself
// otherwise.
func BaseSale(id string) string {
	if sale, _, ok := SplitShardID(id); ok {
		return sale
	}
	return id
}

// ShardOf is the shard (0..k-1) that user's purchases of a sale with k shards go to: FNV-1a of
// the user id, mod k. It is stable (the same user always lands in the same shard, which is
// what keeps one unit per user with one script on one shard) and every part of the system
// (gateways, token issuers, backend) computes it the same way.
func ShardOf(user string, k int) int {
	if k <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % uint32(k))
}

// UserShardID is the shard id that user's purchases of sale go to; the sale itself when k <= 1.
func UserShardID(sale, user string, k int) string {
	if k <= 1 {
		return sale
	}
	return ShardID(sale, ShardOf(user, k))
}

// SplitStock divides stock over k shards evenly, the remainder going to the first shards.
func SplitStock(stock, k int) []int {
	if k < 1 {
		k = 1
	}
	out := make([]int, k)
	for i := range out {
		out[i] = stock / k
		if i < stock%k {
			out[i]++
		}
	}
	return out
}

// MovesKey is a shard's journal of units taken from it by a rebalance and not yet confirmed
// added to their receiver (move id -> "<receiver shard id>|<units>").
func MovesKey(shard string) string { return "seckill:" + SaleTag(shard) + ":moves" }

// MovedInKey is the set of move ids a shard has already received, so a move is applied once.
func MovedInKey(shard string) string { return "seckill:" + SaleTag(shard) + ":moved_in" }
