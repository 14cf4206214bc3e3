package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// Drain is how the winners reached Postgres: the time from each 202 to its order row.
type Drain struct {
	Accepted int `json:"accepted"`
	InPG     int `json:"in_postgres"`
	// Settled is true when every accepted order id has a row (any status).
	Settled bool `json:"settled"`
	// Per-order delay from the 202 (client clock) to the row's created_at (Postgres clock: the
	// same machine here). P50/P99/Max in milliseconds.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// LastAfterMs: the last row's created_at minus the last 202 (how long the queue trailed the
	// crowd). Observed: how long after the last 202 the poll first saw every row.
	LastAfterMs float64 `json:"last_after_ms"`
	ObservedMs  float64 `json:"observed_ms"`
	// StockSettled: Redis and Postgres agreed on the stock before the verification (see
	// WaitSettled); SettleMs is how long after the end of the rush that was seen.
	StockSettled bool    `json:"stock_settled"`
	SettleMs     float64 `json:"settle_ms"`
}

func (d Drain) String() string {
	s := fmt.Sprintf("%d/%d winners in Postgres; 202 -> row p50 %.0f ms, p99 %.0f ms, max %.0f ms; all rows seen %.0f ms after the last 202",
		d.InPG, d.Accepted, d.P50ms, d.P99ms, d.MaxMs, d.ObservedMs)
	if d.StockSettled {
		s += fmt.Sprintf("; Redis and Postgres stock agreed %.0f ms after the rush", d.SettleMs)
	} else if d.SettleMs > 0 {
		s += "; Redis and Postgres stock did NOT agree before the timeout"
	}
	return s
}

// WorstMs is the conservative drain time: the larger of the slowest order by its row's
// created_at (which Postgres sets when the transaction starts, a little before the commit) and
// the time from the last 202 until a poll saw every row (an upper bound, within one poll).
func (d Drain) WorstMs() float64 {
	return max(d.MaxMs, d.ObservedMs)
}

// WaitDrained polls Postgres until every accepted order id has a row, or timeout passes, and
// measures the drain. It returns with Settled false on timeout (the verifier then reports the
// missing orders).
func WaitDrained(ctx context.Context, pg *pgxpool.Pool, accepted []Accepted, timeout time.Duration) (Drain, error) {
	at := map[string]time.Time{}
	var last time.Time
	for _, a := range accepted {
		if t, ok := at[a.OrderID]; !ok || a.At.Before(t) {
			at[a.OrderID] = a.At
		}
		if a.At.After(last) {
			last = a.At
		}
	}
	ids := make([]string, 0, len(at))
	for id := range at {
		ids = append(ids, id)
	}
	d := Drain{Accepted: len(ids)}
	deadline := time.Now().Add(timeout)
	created := map[string]time.Time{}
	pending := ids
	for {
		rows, err := pg.Query(ctx, `SELECT order_id, created_at FROM orders WHERE order_id = ANY($1)`, pending)
		if err != nil {
			return d, err
		}
		for rows.Next() {
			var id string
			var t time.Time
			if err := rows.Scan(&id, &t); err != nil {
				rows.Close()
				return d, err
			}
			created[id] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return d, err
		}
		next := pending[:0]
		for _, id := range pending {
			if _, ok := created[id]; !ok {
				next = append(next, id)
			}
		}
		pending = next
		if len(pending) == 0 {
			d.Settled = true
			if !last.IsZero() {
				d.ObservedMs = ms(time.Since(last))
			}
			break
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
	d.InPG = len(created)
	var delays []float64
	var lastRow time.Time
	for id, t := range created {
		delays = append(delays, ms(t.Sub(at[id])))
		if t.After(lastRow) {
			lastRow = t
		}
	}
	if len(delays) > 0 {
		sort.Float64s(delays)
		d.P50ms = delays[len(delays)/2]
		d.P99ms = delays[min(len(delays)-1, len(delays)*99/100)]
		d.MaxMs = delays[len(delays)-1]
		d.LastAfterMs = ms(lastRow.Sub(last))
	}
	return d, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WaitSettled polls until Postgres and Redis agree on the sale's stock (every unit Redis sold
// is an order row, or came back by compensation), or timeout passes. Winners the client never
// heard of (answered 503 while the gate's script ran) are only visible this way: the drain of
// the 202s alone would check the invariants while their orders are still in the queue.
func WaitSettled(ctx context.Context, pg *pgxpool.Pool, rdb redis.UniversalClient, sale string, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		var pgStock int
		if err := pg.QueryRow(ctx, `SELECT stock FROM sales WHERE id = $1`, sale).Scan(&pgStock); err != nil {
			return false, err
		}
		raw, err := rdb.HGet(ctx, contract.MetaKey(sale), contract.FieldStock).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, err
		}
		if n, err := strconv.Atoi(raw); err == nil && n == pgStock {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
