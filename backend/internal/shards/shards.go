// Package shards reads a sale's shard count from Postgres, cached: the one fact about sharding
// that the order side (compensation) and the sale side (preheat, reconcile, rebalance) both need.
package shards

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seckilledge/seckill/internal/shardcache"
)

// Counts caches the shard count of sales read from Postgres (the cache shared with the
// gateway, internal/shardcache). It never changes for a sale, so a cached value never goes
// stale.
type Counts struct{ shardcache.Counts }

// Of returns the shard count of sale (1 for an unsharded or unknown sale).
func (c *Counts) Of(ctx context.Context, pool *pgxpool.Pool, sale string) (int, error) {
	return c.Load(ctx, sale, func(ctx context.Context, sale string) (int, error) {
		var k int
		err := pool.QueryRow(ctx, `SELECT shards FROM sales WHERE id = $1`, sale).Scan(&k)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, nil // not stored: a sale created later may be sharded
		}
		return k, err
	})
}
