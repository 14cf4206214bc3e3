package backend

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/sales"
)

// The backend's tests drive sales through the Service's Sales (backend/sales holds the code):
// these are the few names of it they use.

type hunger = sales.Hunger

func hungryShards(s []bool) *hunger { return sales.HungryShards(s) }

func shardStocks(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]int64, error) {
	return sales.ShardStocks(ctx, rdb, ids)
}
