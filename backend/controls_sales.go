package backend

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
	var s admin.SaleSummary
	err := row.Scan(&s.ID, &s.InitialStock, &s.StockDB, &s.StartsAt, &s.EndsAt, &s.Shards, &s.Paused)
	return s, err
}

// Sales lists every sale with its state, newest start first. Redis is read in one pipelined
// round trip for all of them.
func (s *Service) Sales(ctx context.Context) ([]admin.SaleSummary, error) {
	return s.salesEndingAfter(ctx, time.Time{}, 0)
}

// salesEndingAfter lists the sales that end after t, newest start first, at most limit (0: all).
func (s *Service) salesEndingAfter(ctx context.Context, t time.Time, limit int) ([]admin.SaleSummary, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+saleColumns+` FROM sales WHERE ends_at > $1
		ORDER BY starts_at DESC, id LIMIT NULLIF($2, 0)`, t, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (admin.SaleSummary, error) { return scanSale(r) })
	if err != nil {
		return nil, err
	}
	return out, s.fillRedis(ctx, out)
}

// saleSummary reads one sale (errUnknownSale when Postgres does not know it).
func (s *Service) saleSummary(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sale string) (admin.SaleSummary, error) {
	sum, err := scanSale(q.QueryRow(ctx, `SELECT `+saleColumns+` FROM sales WHERE id = $1`, sale))
	if errors.Is(err, pgx.ErrNoRows) {
		return sum, errUnknownSale
	}
	if err != nil {
		return sum, err
	}
	one := []admin.SaleSummary{sum}
	err = s.fillRedis(ctx, one)
	return one[0], err
}

// fillRedis adds the Redis side (presence, stock summed over shards, buyers) and the state.
func (s *Service) fillRedis(ctx context.Context, sales []admin.SaleSummary) error {
	type reads struct {
		base   *redis.IntCmd
		stock  []*redis.StringCmd
		buyers []*redis.IntCmd
	}
	pipe := s.Redis.Pipeline()
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
	now := s.now()
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

func (s *Service) handleListSales(w http.ResponseWriter, r *http.Request) {
	sales, err := s.Sales(r.Context())
	if err != nil {
		s.Log.Warn("list sales failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"sales": sales})
}
