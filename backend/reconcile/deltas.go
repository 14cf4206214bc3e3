package reconcile

import (
	"sort"

	"github.com/seckilledge/seckill/contract"
)

// ShardDeltas spreads reconcile's stock delta over a sharded sale's shards given their
// snapshot stocks: a positive delta evenly (contract.SplitStock); a negative one from the
// shards that hold the most, never below 0 as far as the snapshot knows (the remainder, when
// the shards hold less than the delta asks, goes to the first shard: Redis then refuses there
// until compensations bring it back to 0).
func ShardDeltas(stocks []int64, delta int64) []int64 {
	k := len(stocks)
	out := make([]int64, k)
	if delta >= 0 {
		for i, n := range contract.SplitStock(int(delta), k) {
			out[i] = int64(n)
		}
		return out
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return stocks[order[a]] > stocks[order[b]] })
	left := -delta
	for _, i := range order {
		if left == 0 {
			break
		}
		if take := min(max(stocks[i], 0), left); take > 0 {
			out[i] = -take
			left -= take
		}
	}
	if left > 0 {
		out[0] -= left
	}
	return out
}
