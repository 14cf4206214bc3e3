package sales

import (
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// The rebalance of a sharded sale with variants: every shard holds its part of
// every variant (fields "v:<variant>" beside the total "stock"), and a buyer of variant X can
// only be served by the X units of his own shard. So units move one variant at a time: each
// variant is planned on its own (PlanRebalance over that variant's units per shard) and moved
// with a move id that names it (contract.VariantMoveID), which makes shard_take.lua and
// shard_give.lua move the variant's field and the shard's total together.

// Hunger is what buyers wait for, per shard of one sale: the shards whose total ran out (they
// want anything) and, per variant, the shards that ran out of it (or refused a buyer of it).
// A nil *Hunger is "no one in particular": the rebalance evens out everything.
type Hunger struct {
	all      []bool            // all[i]: shard i has no unit left at all
	variants map[string][]bool // variants[v][i]: shard i wants variant v
}

// HungryShards is the Hunger of shards that want anything (nil: none in particular).
func HungryShards(shards []bool) *Hunger {
	if shards == nil {
		return nil
	}
	return &Hunger{all: shards}
}

// add records that shard wants variant ("" for anything: its total ran out).
func (h *Hunger) Add(shard int, variant string) {
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

// wants reports whether variant is worth a plan: always for a nil Hunger (even everything
// out), otherwise when some shard wants it, or wants anything.
func (h *Hunger) wants(variant string) bool {
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
func (h *Hunger) of(variant string) []bool {
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

// variantReport lists each variant's units per shard before and after a rebalance (nil for a
// single-stock sale, so its report is what it always was).
func variantReport(before, after shards.Metas) []admin.VariantRebalance {
	if len(before.Variants) == 0 {
		return nil
	}
	out := make([]admin.VariantRebalance, len(before.Variants))
	for i, v := range before.Variants {
		out[i] = admin.VariantRebalance{ID: v, StocksBefore: before.VStocks[v], StocksAfter: after.VStocks[v]}
		if out[i].StocksAfter == nil {
			out[i].StocksAfter = make([]int64, len(before.Stocks))
		}
	}
	return out
}
