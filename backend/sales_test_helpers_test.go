package backend

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// The backend's tests drive sales through the Service (backend/sales holds the code): these
// are the few names of it they use.

type hunger = sales.Hunger

func hungryShards(s []bool) *hunger { return sales.HungryShards(s) }

func shardStocks(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]int64, error) {
	return sales.ShardStocks(ctx, rdb, ids)
}

func roomKey(sale string) string { return contract.RoomKey(sale) }

// PreheatRoom is sales.PreheatRoom.
var PreheatRoom = sales.PreheatRoom

func (s *Service) rebalance(ctx context.Context, sale string, h *hunger) (admin.RebalanceReport, error) {
	return s.sales().RebalanceHungry(ctx, sale, h)
}

func (s *Service) rebalanceLocked(ctx context.Context, sale string, k int, h *hunger, rep *admin.RebalanceReport) error {
	return s.sales().RebalanceLocked(ctx, sale, k, h, rep)
}

func (s *Service) rebalanceAfterReconcile(ctx context.Context, sale string, k int, rep *admin.ReconcileReport) error {
	return s.sales().AfterReconcile(ctx, sale, k, rep)
}

func (s *Service) withSaleLock(ctx context.Context, sale string, wait time.Duration, fn func(lock.Held) error) error {
	return s.sales().WithSaleLock(ctx, sale, wait, fn)
}
