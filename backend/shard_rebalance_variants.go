package backend

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// The rebalance of a sharded sale with variants (issue 18): every shard holds its part of
// every variant (fields "v:<variant>" beside the total "stock"), and a buyer of variant X can
// only be served by the X units of his own shard. So units move one variant at a time: each
// variant is planned on its own (PlanRebalance over that variant's units per shard) and moved
// with a move id that names it (contract.VariantMoveID), which makes shard_take.lua and
// shard_give.lua move the variant's field and the shard's total together.

// hunger is what buyers wait for, per shard of one sale: the shards whose total ran out (they
// want anything) and, per variant, the shards that ran out of it (or refused a buyer of it).
// A nil *hunger is "no one in particular": the rebalance evens out everything.
type hunger struct {
	all      []bool            // all[i]: shard i has no unit left at all
	variants map[string][]bool // variants[v][i]: shard i wants variant v
}

// hungryShards is the hunger of shards that want anything (nil: none in particular).
func hungryShards(shards []bool) *hunger {
	if shards == nil {
		return nil
	}
	return &hunger{all: shards}
}

// add records that shard wants variant ("" for anything: its total ran out).
func (h *hunger) add(shard int, variant string) {
	if shard < 0 || shard >= contract.MaxShards {
		return
	}
	mark := func(s []bool) []bool {
		if s == nil {
			s = make([]bool, contract.MaxShards)
		}
		s[shard] = true
		return s
	}
	if variant == "" {
		h.all = mark(h.all)
		return
	}
	if h.variants == nil {
		h.variants = map[string][]bool{}
	}
	h.variants[variant] = mark(h.variants[variant])
}

// wants reports whether variant is worth a plan: always for a nil hunger (even everything
// out), otherwise when some shard wants it, or wants anything.
func (h *hunger) wants(variant string) bool {
	if h == nil {
		return true
	}
	for _, set := range [][]bool{h.all, h.variants[variant]} {
		for _, x := range set {
			if x {
				return true
			}
		}
	}
	return false
}

// of is PlanRebalance's hungry argument for variant: the shards that want it or anything.
// For "" (a single-stock sale, which has only its stock to move) every wish counts.
func (h *hunger) of(variant string) []bool {
	if h == nil {
		return nil
	}
	out := make([]bool, contract.MaxShards)
	or := func(s []bool) {
		for i, x := range s {
			out[i] = out[i] || x
		}
	}
	or(h.all)
	if variant != "" {
		or(h.variants[variant])
		return out
	}
	for _, s := range h.variants {
		or(s)
	}
	return out
}

// shardMetas is what a rebalance reads of a sale's shards (their meta hashes).
type shardMetas struct {
	stocks  []int64 // each shard's total
	present []bool  // false: the shard is not in Redis (its stock reads 0)
	// variants are the sale's variant ids, sorted (none: a single-stock sale), and vstocks
	// each one's units per shard (a shard without the field holds none of it).
	variants []string
	vstocks  map[string][]int64
}

// readShardMetas reads every shard's meta hash in one pipelined round trip. The hashes are
// small (a few fields, plus one per variant, at most contract.MaxVariants).
func readShardMetas(ctx context.Context, rdb redis.UniversalClient, ids []string) (shardMetas, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, contract.MetaKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return shardMetas{}, err
	}
	sm := shardMetas{stocks: make([]int64, len(ids)), present: make([]bool, len(ids)), vstocks: map[string][]int64{}}
	for i, c := range cmds {
		meta := c.Val()
		n, err := strconv.ParseInt(meta[contract.FieldStock], 10, 64)
		sm.stocks[i], sm.present[i] = n, err == nil
		for f, val := range meta {
			v, ok := strings.CutPrefix(f, contract.VariantFieldPrefix)
			if !ok || !contract.ValidVariantID(v) {
				continue
			}
			if sm.vstocks[v] == nil {
				sm.vstocks[v] = make([]int64, len(ids))
				sm.variants = append(sm.variants, v)
			}
			sm.vstocks[v][i], _ = strconv.ParseInt(val, 10, 64)
		}
	}
	sort.Strings(sm.variants)
	return sm, nil
}

// variantReport lists each variant's units per shard before and after a rebalance (nil for a
// single-stock sale, so its report is what it always was).
func variantReport(before, after shardMetas) []admin.VariantRebalance {
	if len(before.variants) == 0 {
		return nil
	}
	out := make([]admin.VariantRebalance, len(before.variants))
	for i, v := range before.variants {
		out[i] = admin.VariantRebalance{ID: v, StocksBefore: before.vstocks[v], StocksAfter: after.vstocks[v]}
		if out[i].StocksAfter == nil {
			out[i].StocksAfter = make([]int64, len(before.stocks))
		}
	}
	return out
}
