// Package shards holds what both the order side and the sale side (preheat, rebalance,
// reconcile, the controls) read of a sale's shards and variants: the shard count, cached; the
// buyers over every shard; a sale's variants in Postgres; and the completion of the unit moves
// a rebalance journaled between two shards.
package shards

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/shardcache"
	"github.com/seckilledge/seckill/lua"
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

// Buyers reads the buyers of every shard (user -> order id; a user is in one shard only).
func Buyers(ctx context.Context, rdb redis.UniversalClient, ids []string) (map[string]string, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, contract.BuyersKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range cmds {
		for u, o := range c.Val() {
			out[u] = o
		}
	}
	return out, nil
}

// Querier is a pool or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Variants reads a sale's variants from Postgres, by id.
func Variants(ctx context.Context, q Querier, sale string) ([]admin.VariantStatus, error) {
	rows, err := q.Query(ctx, `SELECT variant_id, initial_stock, stock FROM sale_variants WHERE sale_id = $1 ORDER BY variant_id`, sale)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (admin.VariantStatus, error) {
		var v admin.VariantStatus
		return v, r.Scan(&v.ID, &v.InitialStock, &v.StockDB)
	})
}

// GiveUnits applies journaled move id (n units) to shard to, then drops the journal entry.
func GiveUnits(ctx context.Context, rdb redis.UniversalClient, from, to, id string, n int) error {
	if _, _, err := (lua.ShardGiveCall{To: to, Move: id, Units: n}).Run(ctx, rdb); err != nil {
		return err
	}
	return rdb.HDel(ctx, contract.MovesKey(from), id).Err()
}

// FinishMoves completes the moves journaled in the shards ids (a rebalance interrupted
// between taking and giving) and returns how many it completed. shard_give.lua applies a move
// once, so a move that was in fact given already is only removed from the journal. A variant
// move's id names its variant (contract.VariantMoveID): it is given back to that variant.
func FinishMoves(ctx context.Context, rdb redis.UniversalClient, ids []string) (int, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, contract.MovesKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	done := 0
	for i, c := range cmds {
		for id, v := range c.Val() {
			to, units, ok := strings.Cut(v, "|")
			n, err := strconv.Atoi(units)
			if !ok || err != nil || n <= 0 || contract.BaseSale(to) != contract.BaseSale(ids[i]) {
				return done, fmt.Errorf("move journal of %s: bad entry %q", ids[i], v)
			}
			if err := GiveUnits(ctx, rdb, ids[i], to, id, n); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}

// Metas is what a rebalance (and a stock change) reads of a sale's shards (their meta hashes).
type Metas struct {
	Stocks  []int64 // each shard's total
	Present []bool  // false: the shard is not in Redis (its stock reads 0)
	// Variants are the sale's variant ids, sorted (none: a single-stock sale), and VStocks
	// each one's units per shard (a shard without the field holds none of it).
	Variants []string
	VStocks  map[string][]int64
}

// ReadMetas reads every shard's meta hash in one pipelined round trip. The hashes are
// small (a few fields, plus one per variant, at most contract.MaxVariants).
func ReadMetas(ctx context.Context, rdb redis.UniversalClient, ids []string) (Metas, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, contract.MetaKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return Metas{}, err
	}
	sm := Metas{Stocks: make([]int64, len(ids)), Present: make([]bool, len(ids)), VStocks: map[string][]int64{}}
	for i, c := range cmds {
		meta := c.Val()
		n, err := strconv.ParseInt(meta[contract.FieldStock], 10, 64)
		sm.Stocks[i], sm.Present[i] = n, err == nil
		for f, val := range meta {
			v, ok := strings.CutPrefix(f, contract.VariantFieldPrefix)
			if !ok || !contract.ValidVariantID(v) {
				continue
			}
			if sm.VStocks[v] == nil {
				sm.VStocks[v] = make([]int64, len(ids))
				sm.Variants = append(sm.Variants, v)
			}
			sm.VStocks[v][i], _ = strconv.ParseInt(val, 10, 64)
		}
	}
	sort.Strings(sm.Variants)
	return sm, nil
}

// FillVariants reads each variant's stock in Redis: summed over the shards of a sharded
// sale (k > 1), each holding its part of every variant.
func FillVariants(ctx context.Context, rdb redis.UniversalClient, sale string, k int, vs []admin.VariantStatus) error {
	if len(vs) == 0 {
		return nil
	}
	fields := make([]string, len(vs))
	for i, v := range vs {
		fields[i] = contract.VariantField(v.ID)
	}
	for _, id := range contract.ShardIDs(sale, k) {
		vals, err := rdb.HMGet(ctx, contract.MetaKey(id), fields...).Result()
		if err != nil {
			return err
		}
		for i, x := range vals {
			if str, ok := x.(string); ok {
				if n, err := strconv.ParseInt(str, 10, 64); err == nil {
					if vs[i].StockRedis == nil {
						vs[i].StockRedis = new(int64)
					}
					*vs[i].StockRedis += n
				}
			}
		}
	}
	return nil
}
