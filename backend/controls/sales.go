package controls

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// stateOf decides a sale's state: ended wins over paused (an ended sale is final), paused over
// scheduled (the operator's word is shown), then the window and the stock.
func stateOf(now time.Time, sum admin.SaleSummary) string {
	switch {
	case !now.Before(sum.EndsAt):
		return admin.SaleEnded
	case sum.Paused:
		return admin.SalePaused
	case now.Before(sum.StartsAt):
		return admin.SaleScheduled
	case sum.StockRedis != nil && *sum.StockRedis <= 0, sum.StockRedis == nil && sum.StockDB <= 0:
		return admin.SaleSoldOut
	}
	return admin.SaleOpen
}

const saleColumns = `id, initial_stock, stock, starts_at, ends_at, shards, paused`

func scanSale(row pgx.Row) (admin.SaleSummary, error) {
	var sum admin.SaleSummary
	err := row.Scan(&sum.ID, &sum.InitialStock, &sum.StockDB, &sum.StartsAt, &sum.EndsAt, &sum.Shards, &sum.Paused)
	return sum, err
}

// Sales lists every sale with its state, newest start first. Redis is read in one pipelined
// round trip for all of them.
func (ct *Controls) Sales(ctx context.Context) ([]admin.SaleSummary, error) {
	return ct.SalesEndingAfter(ctx, time.Time{}, 0)
}

// SalesEndingAfter lists the sales that end after t, newest start first, at most limit (0: all).
func (ct *Controls) SalesEndingAfter(ctx context.Context, t time.Time, limit int) ([]admin.SaleSummary, error) {
	rows, err := ct.Pool.Query(ctx, `SELECT `+saleColumns+` FROM sales WHERE ends_at > $1
		ORDER BY starts_at DESC, id LIMIT NULLIF($2, 0)`, t, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (admin.SaleSummary, error) { return scanSale(r) })
	if err != nil {
		return nil, err
	}
	return out, ct.fillRedis(ctx, out)
}

// saleSummary reads one sale (ErrUnknownSale when Postgres does not know it).
func (ct *Controls) saleSummary(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sale string) (admin.SaleSummary, error) {
	sum, err := scanSale(q.QueryRow(ctx, `SELECT `+saleColumns+` FROM sales WHERE id = $1`, sale))
	if errors.Is(err, pgx.ErrNoRows) {
		return sum, ErrUnknownSale
	}
	if err != nil {
		return sum, err
	}
	one := []admin.SaleSummary{sum}
	err = ct.fillRedis(ctx, one)
	return one[0], err
}

// fillRedis adds the Redis side (presence, stock summed over shards, buyers) and the state.
func (ct *Controls) fillRedis(ctx context.Context, sales []admin.SaleSummary) error {
	type reads struct {
		base   *redis.IntCmd
		stock  []*redis.StringCmd
		buyers []*redis.IntCmd
	}
	pipe := ct.Redis.Pipeline()
	all := make([]reads, len(sales))
	for i, sum := range sales {
		all[i].base = pipe.Exists(ctx, contract.MetaKey(sum.ID))
		for _, id := range contract.ShardIDs(sum.ID, sum.Shards) {
			all[i].stock = append(all[i].stock, pipe.HGet(ctx, contract.MetaKey(id), contract.FieldStock))
			all[i].buyers = append(all[i].buyers, pipe.HLen(ctx, contract.BuyersKey(id)))
		}
	}
	if len(sales) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	now := ct.Now()
	for i := range sales {
		r, sum := all[i], &sales[i]
		sum.Preheated = r.base.Val() == 1
		var stock int64
		found := false
		for _, c := range r.stock {
			if n, err := strconv.ParseInt(c.Val(), 10, 64); err == nil {
				stock += n
				found = true
			}
		}
		if found {
			sum.StockRedis = &stock
		}
		for _, c := range r.buyers {
			sum.Buyers += c.Val()
		}
		sum.State = stateOf(now, *sum)
	}
	return nil
}

func (ct *Controls) HandleListSales(w http.ResponseWriter, r *http.Request) {
	sales, err := ct.Sales(r.Context())
	if err != nil {
		ct.Log.Warn("list sales failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"sales": sales})
}
