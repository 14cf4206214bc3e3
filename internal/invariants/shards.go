package invariants

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
)

// RedisSale reads a sale's Redis state: its meta hash and its buyers. For a sharded sale
// (field "shards" = K > 1; docs/scaling.md) the stock is the sum over its shards, the buyers
// are every shard's (a user is in one shard only), and "shards" stays in the meta returned;
// for an unsharded sale it is exactly the sale's meta and buyers hashes.
func RedisSale(ctx context.Context, rdb redis.UniversalClient, sale string) (meta, buyers map[string]string, err error) {
	meta, err = rdb.HGetAll(ctx, contract.MetaKey(sale)).Result()
	if err != nil {
		return nil, nil, err
	}
	k, _ := strconv.Atoi(meta[contract.FieldShards])
	ids := contract.ShardIDs(sale, k)
	pipe := rdb.Pipeline()
	stocks := make([]*redis.StringCmd, len(ids))
	hashes := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		stocks[i] = pipe.HGet(ctx, contract.MetaKey(id), contract.FieldStock)
		hashes[i] = pipe.HGetAll(ctx, contract.BuyersKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	buyers = map[string]string{}
	for _, h := range hashes {
		for u, o := range h.Val() {
			buyers[u] = o
		}
	}
	if k > 1 {
		sum, found := 0, false
		for _, c := range stocks {
			if n, err := strconv.Atoi(c.Val()); err == nil {
				sum += n
				found = true
			}
		}
		if found {
			meta[contract.FieldStock] = strconv.Itoa(sum)
		} else {
			delete(meta, contract.FieldStock)
		}
		// A sharded sale with variants: each shard holds its part of every variant.
		if err := sumShardVariants(ctx, rdb, ids, meta); err != nil {
			return nil, nil, err
		}
	}
	return meta, buyers, nil
}

// sumShardVariants puts into meta each variant field ("v:<variant>") summed over the shards.
func sumShardVariants(ctx context.Context, rdb redis.UniversalClient, ids []string, meta map[string]string) error {
	sums := map[string]int{}
	for _, id := range ids {
		m, err := rdb.HGetAll(ctx, contract.MetaKey(id)).Result()
		if err != nil {
			return err
		}
		for f, v := range m {
			if strings.HasPrefix(f, contract.VariantFieldPrefix) {
				n, _ := strconv.Atoi(v)
				sums[f] += n
			}
		}
	}
	for f, n := range sums {
		meta[f] = strconv.Itoa(n)
	}
	return nil
}

// heldOf reads a sale's held units per user over its shards (a user is in one shard only);
// purchase counters ("#<user>") are skipped. A sale with a limit of 1 has no held hash
// (contract.UsesHeld): there each user in the buyers hash holds one unit.
func heldOf(ctx context.Context, rdb redis.UniversalClient, ids []string, limit int) (map[string]int, error) {
	out := map[string]int{}
	for _, id := range ids {
		if !contract.UsesHeld(limit) {
			b, err := rdb.HKeys(ctx, contract.BuyersKey(id)).Result()
			if err != nil {
				return nil, err
			}
			for _, user := range b {
				out[user]++
			}
			continue
		}
		h, err := rdb.HGetAll(ctx, contract.HeldKey(id)).Result()
		if err != nil {
			return nil, err
		}
		for user, n := range h {
			if strings.HasPrefix(user, "#") {
				continue
			}
			v, _ := strconv.Atoi(n)
			out[user] += v
		}
	}
	return out, nil
}
