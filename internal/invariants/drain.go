package invariants

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
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
	// same machine here; created_at is the start of the consumer's transaction, a little before
	// its commit, so this is a lower bound). P50/P99/Max in milliseconds.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// ObservedMaxMs: per order, from the 202 until a poll of Postgres (every 50 to 250 ms,
	// from the first 202 on) first saw the committed row; the slowest order. An upper bound
	// (within one poll and its query).
	ObservedMaxMs float64 `json:"observed_max_ms"`
	// StockSettled: Redis and Postgres agreed on the stock before the verification (see
	// WaitSettled); SettleMs is how long after the end of the rush that was seen.
	StockSettled bool    `json:"stock_settled"`
	SettleMs     float64 `json:"settle_ms"`
}

func (d Drain) String() string {
	s := fmt.Sprintf("%d/%d winners in Postgres; 202 -> row p50 %.0f ms, p99 %.0f ms, max %.0f ms (seen by polling: max %.0f ms)",
		d.InPG, d.Accepted, d.P50ms, d.P99ms, d.MaxMs, d.ObservedMaxMs)
	if d.StockSettled {
		s += fmt.Sprintf("; Redis and Postgres stock agreed %.0f ms after the rush", d.SettleMs)
	} else if d.SettleMs > 0 {
		s += "; Redis and Postgres stock did NOT agree before the timeout"
	}
	return s
}

// WorstMs is the conservative drain time of the slowest winner: the larger of its row's
// created_at delay and the delay until a poll saw the row.
func (d Drain) WorstMs() float64 {
	return max(d.MaxMs, d.ObservedMaxMs)
}

// DrainWatcher follows winners into Postgres while the crowd is still running: Add each 202 as
// it arrives, and a poll every 50 ms records when each order's row first became visible.
type DrainWatcher struct {
	pg *pgxpool.Pool

	mu      sync.Mutex
	at      map[string]time.Time // order id -> first 202
	pending map[string]bool
	created map[string]time.Time // order id -> row created_at
	seen    map[string]time.Time // order id -> first poll that saw the row
	stop    chan struct{}
	done    chan struct{}
	err     error
}

// NewDrainWatcher starts polling (until Wait returns or ctx ends).
func NewDrainWatcher(ctx context.Context, pg *pgxpool.Pool) *DrainWatcher {
	w := &DrainWatcher{pg: pg, at: map[string]time.Time{}, pending: map[string]bool{}, created: map[string]time.Time{},
		seen: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(ctx)
	return w
}

// Add records a 202 (safe from many goroutines).
func (w *DrainWatcher) Add(a Accepted) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.at[a.OrderID]; !ok || a.At.Before(t) {
		w.at[a.OrderID] = a.At
	}
	if _, ok := w.created[a.OrderID]; !ok {
		w.pending[a.OrderID] = true
	}
}

func (w *DrainWatcher) loop(ctx context.Context) {
	defer close(w.done)
	for {
		start := time.Now()
		if err := w.poll(ctx); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		// The watcher shares the machine with what it measures: it polls every 50 ms, or up to
		// every 250 ms when a poll is costly (a long backlog), to take little from Postgres
		// while keeping the observed time accurate.
		pause := min(max(50*time.Millisecond, 4*time.Since(start)), 250*time.Millisecond)
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-time.After(pause):
		}
	}
}

func (w *DrainWatcher) poll(ctx context.Context) error {
	w.mu.Lock()
	ids := make([]string, 0, len(w.pending))
	for id := range w.pending {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	rows, err := w.pg.Query(ctx, `SELECT order_id, created_at FROM orders WHERE order_id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	type row struct {
		id string
		t  time.Time
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.t); err != nil {
			rows.Close()
			return err
		}
		got = append(got, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	now := time.Now()
	w.mu.Lock()
	for _, r := range got {
		w.created[r.id] = r.t
		w.seen[r.id] = now
		delete(w.pending, r.id)
	}
	w.mu.Unlock()
	return nil
}

// Wait waits until every added order has a row, or timeout passes, stops polling and measures.
func (w *DrainWatcher) Wait(ctx context.Context, timeout time.Duration) (Drain, error) {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		n, err := len(w.pending), w.err
		w.mu.Unlock()
		if err != nil || n == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-w.done:
		case <-time.After(10 * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case <-w.done:
			deadline = time.Now() // the poller stopped: nothing more will arrive
		default:
		}
	}
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return Drain{}, w.err
	}
	d := Drain{Accepted: len(w.at), InPG: len(w.created), Settled: len(w.pending) == 0}
	var delays []float64
	for id, t := range w.created {
		delays = append(delays, ms(t.Sub(w.at[id])))
		d.ObservedMaxMs = max(d.ObservedMaxMs, ms(w.seen[id].Sub(w.at[id])))
	}
	if len(delays) > 0 {
		sort.Float64s(delays)
		d.P50ms = delays[len(delays)/2]
		d.P99ms = delays[min(len(delays)-1, len(delays)*99/100)]
		d.MaxMs = delays[len(delays)-1]
	}
	return d, ctx.Err()
}

// WaitDrained watches a finished run's winners into Postgres (see DrainWatcher).
func WaitDrained(ctx context.Context, pg *pgxpool.Pool, accepted []Accepted, timeout time.Duration) (Drain, error) {
	w := NewDrainWatcher(ctx, pg)
	for _, a := range accepted {
		w.Add(a)
	}
	return w.Wait(ctx, timeout)
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
		meta, _, err := RedisSale(ctx, rdb, sale) // the sum over the shards of a sharded sale
		if err != nil {
			return false, err
		}
		raw := meta[contract.FieldStock]
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
