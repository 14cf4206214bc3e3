// Package driver is what every scenario of seckill-bench shares: the stack under test (Start, or
// a Stack describing running processes), a Driver holding its Redis and Postgres clients and
// the admin API, and the measurements of a run (CPU per server process tree, Redis
// commandstats, allocations and GCs, pinning). The scenarios live in bench/scenario/<name>,
// each a function of a *Driver (docs/bench.md, "The code").
package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/internal/invariants"
)

// Driver runs scenarios against one stack.
type Driver struct {
	Stack *Stack
	Redis redis.UniversalClient
	PG    *pgxpool.Pool
	admin *http.Client
}

// NewDriver connects to the stack's Redis and Postgres.
func NewDriver(ctx context.Context, s *Stack) (*Driver, error) {
	pg, err := pgxpool.New(ctx, s.PGURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	if err := rdb.Ping(ctx).Err(); err != nil {
		pg.Close()
		return nil, fmt.Errorf("redis %s: %w", s.RedisAddr, err)
	}
	return &Driver{Stack: s, Redis: rdb, PG: pg, admin: &http.Client{Timeout: 10 * time.Minute}}, nil
}

// Close releases the connections.
func (d *Driver) Close() {
	d.PG.Close()
	_ = d.Redis.Close()
}

// AdminJSON calls the backend's admin API and decodes the answer into out (when not nil). The
// client waits up to 10 minutes: running a million-entry draw answers when the draw is done.
func (d *Driver) AdminJSON(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.Stack.Backend+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.Stack.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.admin.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Admin is AdminJSON without an answer to decode.
func (d *Driver) Admin(ctx context.Context, method, path string, body any) error {
	return d.AdminJSON(ctx, method, path, body, nil)
}

// CreateSale creates a sale open from a minute ago for an hour (unpaid orders are kept an hour,
// so no release runs during a benchmark), and preheats it into Redis when preheat is set.
func (d *Driver) CreateSale(ctx context.Context, sale string, stock int, preheat bool) error {
	return d.CreateShardedSale(ctx, sale, stock, preheat, 0)
}

// CreateShardedSale is CreateSale with a shard count (0 or 1: unsharded).
func (d *Driver) CreateShardedSale(ctx context.Context, sale string, stock int, preheat bool, shards int) error {
	now := time.Now().UTC()
	spec := map[string]any{
		"id": sale, "stock": stock, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at": now.Add(time.Hour).Format(time.RFC3339), "pay_within": "1h",
	}
	if shards > 1 {
		spec["shards"] = shards
	}
	err := d.Admin(ctx, http.MethodPost, "/admin/sales", spec)
	if err != nil {
		return fmt.Errorf("create sale: %w", err)
	}
	if preheat {
		if err := d.Admin(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil); err != nil {
			return fmt.Errorf("preheat: %w", err)
		}
	}
	return nil
}

// SaleID is a fresh sale id for a run of kind (bench-<kind>-<time of day to the µs>).
func SaleID(kind string) string {
	return fmt.Sprintf("bench-%s-%s", kind, strings.ReplaceAll(time.Now().UTC().Format("150405.000000"), ".", ""))
}

// Header is a buyer's request header: who (X-User-ID) and from where (X-Forwarded-For).
func Header(user, ip string) http.Header {
	h := http.Header{}
	h.Set("X-User-ID", user)
	h.Set("X-Forwarded-For", ip)
	return h
}

// Variant is the id of the i-th variant of a variant crowd's sale.
func Variant(i int) string { return fmt.Sprintf("v%d", i) }

// Winners collects a run's 202s as its responses come (Collect is a load.Run's OnResponse),
// and the users whose answer left their purchase uncertain (503, transport errors): the
// invariants allow those an order they were not told of. Read Accepted and Uncertain once the
// run is over; Len and Snapshot while it runs.
type Winners struct {
	mu        sync.Mutex
	Accepted  []invariants.Accepted
	Uncertain map[string]bool
	Drain     *invariants.DrainWatcher // follows the winners into Postgres, when set
}

// Collect records one response.
func (a *Winners) Collect(req load.Request, resp load.Response) {
	switch resp.Outcome {
	case "accepted":
		w := invariants.Accepted{OrderID: resp.OrderID, UserID: req.User, At: resp.At}
		a.mu.Lock()
		a.Accepted = append(a.Accepted, w)
		a.mu.Unlock()
		if a.Drain != nil {
			a.Drain.Add(w)
		}
	case "unavailable", "error":
		a.mu.Lock()
		if a.Uncertain == nil {
			a.Uncertain = map[string]bool{}
		}
		a.Uncertain[req.User] = true
		a.mu.Unlock()
	}
}

// Len is the number of 202s collected so far.
func (a *Winners) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.Accepted)
}

// Snapshot is a copy of the 202s collected so far.
func (a *Winners) Snapshot() []invariants.Accepted {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]invariants.Accepted(nil), a.Accepted...)
}

// CPUReading is the CPU time of each server process tree at one moment, by name (Servers).
type CPUReading map[string]time.Duration

// Servers are the processes whose CPU a run counts, by name: each is the root of a process
// tree (a Postgres backend is the postmaster's child, beam.smp the rabbitmq-server script's).
func (d *Driver) Servers() map[string]int {
	s := map[string]int{"gateway": d.Stack.GatewayPID, "backend": d.Stack.BackendPID, "redis": d.Stack.RedisPID,
		"rabbitmq": d.Stack.RabbitPID, "postgres": d.Stack.PostgresPID}
	for name, pid := range d.Stack.Others {
		s[name] = pid
	}
	return s
}

// ReadCPU reads the CPU time of every server process tree now.
func (d *Driver) ReadCPU() CPUReading {
	s := CPUReading{}
	t := scanProcs()
	for name, pid := range d.Servers() {
		if pid > 0 {
			s[name] = t.treeCPU(pid)
		}
	}
	return s
}

// PerRequest turns the CPU used since before into microseconds per completed request.
func (d *Driver) PerRequest(before CPUReading, res *load.Result) map[string]float64 {
	if res == nil {
		return nil
	}
	return d.PerUnit(before, res.Completed)
}

// PerUnit is the CPU used since before, in microseconds per one of n.
func (d *Driver) PerUnit(before CPUReading, n int) map[string]float64 {
	if n == 0 {
		return nil
	}
	out := map[string]float64{}
	for name, t := range d.ReadCPU() {
		if b, ok := before[name]; ok {
			out[name] = float64((t - b).Microseconds()) / float64(n)
		}
	}
	return out
}
