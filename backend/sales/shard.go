package sales

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/lua"
)

// Hot-sale stock sharding (docs/scaling.md, "Hot-sale stock sharding"): what the backend does
// for a sale created with "shards": K > 1. Its units live in K shards (contract/shard.go);
// a buyer's purchase, token, buyers entry and outbox entry are all in the user's shard.

// ShardStocks reads the Redis stock of every shard (one pipelined round trip; on a cluster
// go-redis splits it per master). A missing shard reads -1.
func ShardStocks(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]int64, error) {
	stocks, present, err := readShardStocks(ctx, rdb, ids)
	for i := range stocks {
		if !present[i] {
			stocks[i] = -1
		}
	}
	return stocks, err
}

// readShardStocks is ShardStocks telling a missing shard (present false) from a stock.
func readShardStocks(ctx context.Context, rdb redis.UniversalClient, ids []string) (stocks []int64, present []bool, err error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, contract.MetaKey(id), contract.FieldStock)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	stocks, present = make([]int64, len(ids)), make([]bool, len(ids))
	for i, c := range cmds {
		n, err := strconv.ParseInt(c.Val(), 10, 64)
		stocks[i], present[i] = n, err == nil
	}
	return stocks, present, nil
}

// preheatShards loads a sharded sale: each shard's meta hash with its portion of stock (split
// evenly, the remainder to the first shards), then the sale's own meta hash with the window,
// a stock of 0 and the shard count, last, so that a gateway told "sharded" finds every shard
// in place. Every step is preheat.lua in "init" mode: a shard already selling keeps its stock.
// The shard ids join the sales index so the relays drain each shard's outbox.
func (s *Sales) preheatShards(ctx context.Context, sale string, stock, k, limit int, variants []lua.Variant, starts, ends time.Time, res *admin.PreheatResult) error {
	ids := contract.ShardIDs(sale, k)
	portions := contract.SplitStock(stock, k)
	for i, id := range ids {
		// Each shard holds the limit (a user buys on their own shard only, so the shard's
		// held hash is the user's whole holding) and its part of every variant.
		_, n, err := lua.PreheatCall{Sale: id, Stock: int64(portions[i]), Starts: starts, Ends: ends,
			Retention: s.RetentionOrDefault(), Namespace: s.Namespace, Limit: limit, Variants: shardVariants(variants, i, k)}.Run(ctx, s.Redis)
		if err != nil {
			return fmt.Errorf("preheat.lua on shard %s: %w", id, err)
		}
		res.StockRedis += n
	}
	members := make([]any, 0, k)
	for _, id := range ids {
		members = append(members, id)
	}
	// The shards first: a relay must know every outbox before a gate can write to one.
	if err := s.Redis.SAdd(ctx, contract.SalesIndexKey, members...).Err(); err != nil {
		return err
	}
	// The base hash: the window and the shard count, no stock, no limit, no variants (the
	// shards carry them).
	created, _, err := lua.PreheatCall{Sale: sale, Starts: starts, Ends: ends, Retention: s.RetentionOrDefault(),
		Shards: k, Namespace: s.Namespace}.Run(ctx, s.Redis)
	if err != nil {
		return fmt.Errorf("preheat.lua: %w", err)
	}
	res.Created = created
	return s.Redis.SAdd(ctx, contract.SalesIndexKey, sale).Err()
}

// shardStatus fills the per-shard part of a sharded sale's status and returns its buyers over
// every shard.
func (s *Sales) shardStatus(ctx context.Context, st *admin.SaleStatus) (map[string]string, error) {
	ids := contract.ShardIDs(st.ID, st.Shards)
	stocks, err := ShardStocks(ctx, s.Redis, ids)
	if err != nil {
		return nil, err
	}
	st.ShardStock = stocks
	var sum int64
	present := false
	for _, n := range stocks {
		if n >= 0 {
			sum += n
			present = true
		}
	}
	st.StockRedis = nil
	if present {
		st.StockRedis = &sum
	}
	return shards.Buyers(ctx, s.Redis, ids)
}
