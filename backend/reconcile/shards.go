package reconcile

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// reconcileShards applies reconcile's stock delta and buyer restores (pairs user, order id) to
// the shards of a sharded sale, each with reconcile.lua on its own keys, and returns the sum of
// the shards' stocks after it.
func reconcileShards(ctx context.Context, rdb redis.UniversalClient, sale string, k int, stocks []int64, delta int64, restore []any) (int64, error) {
	deltas := ShardDeltas(stocks, delta)
	restores := make([][]any, k)
	for i := 0; i+1 < len(restore); i += 2 {
		sh := contract.ShardOf(restore[i].(string), k)
		restores[sh] = append(restores[sh], restore[i], restore[i+1])
	}
	var after int64
	for i, id := range contract.ShardIDs(sale, k) {
		if deltas[i] == 0 && len(restores[i]) == 0 {
			after += stocks[i]
			continue
		}
		stock, _, _, err := lua.ReconcileCall{Sale: id, Delta: deltas[i], Pairs: restores[i]}.Run(ctx, rdb)
		if err != nil {
			return 0, fmt.Errorf("reconcile.lua on shard %s: %w", id, err)
		}
		after += stock
	}
	return after, nil
}
