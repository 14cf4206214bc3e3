package backend

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
)

// Sale states as the operator sees them (GET /admin/sales, the live page, seckillctl).
const (
	SaleScheduled = "scheduled" // before starts_at
	SaleOpen      = "open"      // selling
	SalePaused    = "paused"    // the operator paused it: the gateways refuse with 503 paused
	SaleSoldOut   = "sold_out"  // no unit left (adding stock reopens it)
	SaleEnded     = "ended"     // at or after ends_at: final, no control applies
)

// SaleSummary is one sale in GET /admin/sales and the before/after of the audit trail.
type SaleSummary struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Paused is the operator's pause, kept in Postgres (a paused sale may also be ended or
	// scheduled; State says which one wins).
	Paused bool `json:"paused"`
	// Preheated: the sale's meta hash is in Redis (the gateways know it).
	Preheated    bool      `json:"preheated"`
	InitialStock int       `json:"initial_stock"`
	StockDB      int       `json:"stock_db"`
	StockRedis   *int64    `json:"stock_redis"`
	Buyers       int64     `json:"buyers"`
	StartsAt     time.Time `json:"starts_at"`
	EndsAt       time.Time `json:"ends_at"`
	Shards       int       `json:"shards"`
}

// stateOf decides a sale's state: ended wins over paused (an ended sale is final), paused over
// scheduled (the operator's word is shown), then the window and the stock.
func stateOf(now time.Time, sum SaleSummary) string {
	switch {
	case !now.Before(sum.EndsAt):
		return SaleEnded
	case sum.Paused:
		return SalePaused
	case now.Before(sum.StartsAt):
		return SaleScheduled
	case sum.StockRedis != nil && *sum.StockRedis <= 0, sum.StockRedis == nil && sum.StockDB <= 0:
		return SaleSoldOut
	}
	return SaleOpen
}

const saleColumns = `id, initial_stock, stock, starts_at, ends_at, shards, paused`

func scanSale(row pgx.Row) (SaleSummary, error) {
	var s SaleSummary
	err := row.Scan(&s.ID, &s.InitialStock, &s.StockDB, &s.StartsAt, &s.EndsAt, &s.Shards, &s.Paused)
	return s, err
}

// Sales lists every sale with its state, newest start first. Redis is read in one pipelined
// round trip for all of them.
func (s *Service) Sales(ctx context.Context) ([]SaleSummary, error) {
	return s.salesEndingAfter(ctx, time.Time{}, 0)
}

// salesEndingAfter lists the sales that end after t, newest start first, at most limit (0: all).
func (s *Service) salesEndingAfter(ctx context.Context, t time.Time, limit int) ([]SaleSummary, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+saleColumns+` FROM sales WHERE ends_at > $1
		ORDER BY starts_at DESC, id LIMIT NULLIF($2, 0)`, t, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SaleSummary, error) { return scanSale(r) })
	if err != nil {
		return nil, err
	}
	return out, s.fillRedis(ctx, out)
}

// saleSummary reads one sale (errUnknownSale when Postgres does not know it).
func (s *Service) saleSummary(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sale string) (SaleSummary, error) {
	sum, err := scanSale(q.QueryRow(ctx, `SELECT `+saleColumns+` FROM sales WHERE id = $1`, sale))
	if errors.Is(err, pgx.ErrNoRows) {
		return sum, errUnknownSale
	}
	if err != nil {
		return sum, err
	}
	one := []SaleSummary{sum}
	err = s.fillRedis(ctx, one)
	return one[0], err
}

// fillRedis adds the Redis side (presence, stock summed over shards, buyers) and the state.
func (s *Service) fillRedis(ctx context.Context, sales []SaleSummary) error {
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
		unavailable(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sales": sales})
}
