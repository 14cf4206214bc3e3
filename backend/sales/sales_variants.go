package sales

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/lua"
)

// Variants and per-user limits of a sale (docs/DESIGN.md, "Variants and quantities").

// VariantSpec is one entry of POST /admin/sales's "variants".
type VariantSpec struct {
	ID    string `json:"id"`
	Stock int    `json:"stock"`
}

// validateVariants checks the variants and the limit of a sale spec. A sale with variants gives
// its stock per variant: "stock" must then be absent (0) or their sum.
func (s SaleSpec) validateVariants() error {
	if s.PerUserLimit < 0 || s.PerUserLimit > contract.MaxQuantity {
		return fmt.Errorf("per_user_limit must be between 1 and %d", contract.MaxQuantity)
	}
	if s.Variants == nil {
		return nil
	}
	if len(s.Variants) == 0 || len(s.Variants) > contract.MaxVariants {
		return fmt.Errorf("variants must list 1 to %d variants", contract.MaxVariants)
	}
	seen := make(map[string]bool, len(s.Variants))
	sum := 0
	for _, v := range s.Variants {
		switch {
		case !contract.ValidVariantID(v.ID):
			return fmt.Errorf("variant id %q must match ^[A-Za-z0-9_-]{1,64}$", v.ID)
		case seen[v.ID]:
			return fmt.Errorf("variant %q is listed twice", v.ID)
		case v.Stock < 0 || v.Stock > admin.MaxStock:
			return fmt.Errorf("variant %q: stock must be between 0 and 1e9", v.ID)
		}
		seen[v.ID] = true
		sum += v.Stock
	}
	if sum > admin.MaxStock {
		return errors.New("the variants' stocks must add up to at most 1e9")
	}
	if s.Stock != 0 && s.Stock != sum {
		return fmt.Errorf("stock %d is not the sum of the variants' stocks (%d): give the stock per variant only", s.Stock, sum)
	}
	return nil
}

// totalStock is the sale's total: the sum of its variants', or its stock.
func (s SaleSpec) totalStock() int {
	if s.Variants == nil {
		return s.Stock
	}
	sum := 0
	for _, v := range s.Variants {
		sum += v.Stock
	}
	return sum
}

// limit is the per-user limit, 1 when not given.
func (s SaleSpec) limit() int { return max(s.PerUserLimit, 1) }

// insertVariants writes a new sale's variants (in the sale's creating transaction).
func insertVariants(ctx context.Context, tx pgx.Tx, sale string, vs []VariantSpec) error {
	if len(vs) == 0 {
		return nil
	}
	ids, stocks := make([]string, len(vs)), make([]int32, len(vs))
	for i, v := range vs {
		ids[i], stocks[i] = v.ID, int32(v.Stock)
	}
	_, err := tx.Exec(ctx, `INSERT INTO sale_variants (sale_id, variant_id, initial_stock, stock)
		SELECT $1, v, n, n FROM unnest($2::text[], $3::int[]) AS t(v, n)`, sale, ids, stocks)
	return err
}

// shardVariants is shard i's part (of k) of each variant: every variant split as the sale's
// stock is (contract.SplitStock), so each shard sells some of every variant.
func shardVariants(vs []lua.Variant, i, k int) []lua.Variant {
	if len(vs) == 0 {
		return nil
	}
	out := make([]lua.Variant, len(vs))
	for j, v := range vs {
		out[j] = lua.Variant{ID: v.ID, Stock: int64(contract.SplitStock(int(v.Stock), k)[i])}
	}
	return out
}

// preheatVariants are a sale's variants with their current stock in Postgres, for preheat.lua.
func preheatVariants(vs []admin.VariantStatus) []lua.Variant {
	if len(vs) == 0 {
		return nil
	}
	out := make([]lua.Variant, len(vs))
	for i, v := range vs {
		out[i] = lua.Variant{ID: v.ID, Stock: int64(v.StockDB)}
	}
	return out
}
