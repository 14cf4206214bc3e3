// Package draw runs the draws of the sales in draw mode (docs/draw.md, "The draw job"): the
// close and the draw itself under the sale's lock (automatically at closes_at, or on the
// operator's POST /admin/sales/{id}/draw), then the waves of each variant as their claim windows
// end, and the draw's webhook events through the Postgres outbox. The arithmetic (leaves, tree,
// ranks) is contract/draw's, the same code the verifier re-runs.
//
// Every step is idempotent and the job resumes from what Postgres says it finished: a job that
// crashed or was cancelled anywhere and runs again ends with the same root, the same positions
// and the same winners. The order is the contract's: the entries are fixed and their root
// published (Postgres, then Redis) before the seed is read, and the seed is revealed last.
package draw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/lua"
)

// Runner runs the draws. A zero field means its default.
type Runner struct {
	Pool   *pgxpool.Pool
	Redis  redis.UniversalClient
	Locker lock.Locker
	Log    *slog.Logger
	// DefaultWebhook: the backend has a default webhook URL, so every draw sale's events are
	// recorded (webhook.Worker.HasDefaultURL); otherwise only a sale with a webhook_url's.
	DefaultWebhook bool
	// Wake tells the webhook worker that events were written (nil: nothing to wake).
	Wake func()
	// Stop, when set, is called between the job's steps ("closed": the root is published,
	// "ranked": the positions are written); an error stops the job there (tests: a crash).
	Stop func(step string) error
	// Drand fetches the beacon rounds of the draws that name one (nil: no endpoint; such a
	// draw waits, visibly, until the backend is given one).
	Drand *Drand
	// Now is the clock the beacon round's time is compared with (nil: time.Now).
	Now func() time.Time
}

// ErrNotDraw is returned for a sale that is not in draw mode (or does not exist).
var ErrNotDraw = errors.New("not a draw sale")

// ErrNotPreheated is returned when the draw hash is not in Redis: the sale was never preheated
// (or its keys expired), so there is no seed to draw with. Once a commitment is published, a
// missing seed is lua.ErrSeedLost instead: the draw is stopped, not waiting for a preheat.
var ErrNotPreheated = errors.New("the draw sale is not preheated")

// Draw states (the draws.state column).
const (
	StateOpen   = "open"
	StateClosed = "closed"
	StateDrawn  = "drawn"
	StateDone   = "done"
)

// Chunk sizes: one HSCAN or HSET of this many fields stays far below a millisecond of Redis
// time (the bound is 50 ms per call at a million entries).
const (
	scanCount  = 1000
	writeChunk = 1000
	// pipeDepth HSETs go in one round trip.
	pipeDepth = 16
)

func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

func (r *Runner) stop(step string) error {
	if r.Stop == nil {
		return nil
	}
	return r.Stop(step)
}

// Run runs the draw of sale now, under the sale's lock (waiting up to wait for it): it closes
// the entries when they are still open, fixes and publishes them, draws and opens wave 1 of
// every variant. A draw that had run already is left as it is (its waves advance when their
// windows end). lock.ErrBusy when another instance holds the lock.
func (r *Runner) Run(ctx context.Context, sale string, wait time.Duration) error {
	key := lock.SaleKey(sale)
	return lock.With(ctx, r.Locker, key, wait, func(held lock.Held) error {
		return r.runLocked(ctx, sale, held)
	})
}

func (r *Runner) runLocked(ctx context.Context, sale string, held lock.Held) error {
	state, err := r.state(ctx, sale)
	if err != nil {
		return err
	}
	var fixed *fixedEntries
	if state == StateOpen {
		if fixed, err = r.close(ctx, sale, held); err != nil {
			return err
		}
		state = StateClosed
		metricSteps.WithLabelValues("closed").Inc()
		if err := r.stop("closed"); err != nil {
			return err
		}
	}
	if state == StateClosed {
		if err := r.draw(ctx, sale, held, fixed); err != nil {
			return err
		}
		metricSteps.WithLabelValues("drawn").Inc()
	}
	return nil
}

// state is the sale's draws.state; ErrNotDraw when it has no draws row.
func (r *Runner) state(ctx context.Context, sale string) (string, error) {
	var state string
	err := r.Pool.QueryRow(ctx, `SELECT state FROM draws WHERE sale_id = $1`, sale).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotDraw
	}
	return state, err
}

// fixedEntries are the entries as fixed at the close, in entry-id order (leaf index i is
// entry i): the draw uses them when the close ran in the same job, else reads them back.
type fixedEntries struct {
	entries []drawmath.Entry
	users   []string
}

// parseEntry reads a value of the entries hash: "<entry_id>:<variant>" (entered),
// "<entry_id>:<variant>:w" (withdrawn) or "<entry_id>:<variant>:<pos>" (drawn: an earlier run of
// this job wrote the position; the entry is live). live is false for a withdrawn entry.
func parseEntry(v string) (id, variant string, live bool, err error) {
	parts := strings.Split(v, ":")
	switch {
	case len(parts) == 2:
		return parts[0], parts[1], true, nil
	case len(parts) == 3 && parts[2] == "w":
		return parts[0], parts[1], false, nil
	case len(parts) == 3:
		if _, err := strconv.Atoi(parts[2]); err == nil {
			return parts[0], parts[1], true, nil
		}
	}
	return "", "", false, fmt.Errorf("draw: bad entry value %q", v)
}

// readEntries reads the live entries of the entries hash with HSCAN, scanCount fields a call,
// sorted by entry id.
func (r *Runner) readEntries(ctx context.Context, sale string) (*fixedEntries, error) {
	key := contract.DrawEntriesKey(sale)
	type row struct{ id, variant, user string }
	var rows []row
	if n, err := r.Redis.HLen(ctx, key).Result(); err == nil {
		rows = make([]row, 0, n)
	}
	flagged, err := r.flaggedUsers(ctx, sale)
	if err != nil {
		return nil, err
	}
	var cursor uint64
	for {
		kv, next, err := r.Redis.HScan(ctx, key, cursor, "", scanCount).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			id, variant, live, err := parseEntry(kv[i+1])
			if err != nil {
				return nil, fmt.Errorf("user %s: %w", kv[i], err)
			}
			if live && !flagged[kv[i]] {
				rows = append(rows, row{id, variant, kv[i]})
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	// HSCAN may return a field twice (a rehash between calls): the user is the hash's key, so
	// a repeat is the same user with the same entry; keep one.
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.id, b.id) })
	out := &fixedEntries{entries: make([]drawmath.Entry, 0, len(rows)), users: make([]string, 0, len(rows))}
	for i, x := range rows {
		if i > 0 && rows[i-1].id == x.id {
			if rows[i-1].user == x.user {
				continue
			}
			return nil, fmt.Errorf("draw: entry id %s is held by two users (%s, %s)", x.id, rows[i-1].user, x.user)
		}
		out.entries = append(out.entries, drawmath.Entry{ID: x.id, Variant: x.variant})
		out.users = append(out.users, x.user)
	}
	return out, nil
}

// flaggedUsers are the draw's flagged entrants (contract.DrawFlaggedKey), read with SSCAN:
// their entries are left out of the fixed entries, so they are never ranked and never win
// (docs/draw.md, "Flagged entrants").
func (r *Runner) flaggedUsers(ctx context.Context, sale string) (map[string]bool, error) {
	key := contract.DrawFlaggedKey(sale)
	out := map[string]bool{}
	var cursor uint64
	for {
		us, next, err := r.Redis.SScan(ctx, key, cursor, "", scanCount).Result()
		if err != nil {
			return nil, err
		}
		for _, u := range us {
			out[u] = true
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// close fixes the entries (docs/draw.md, step 4, up to the publication of the root): the
// edge's entries close (draw_close.lua), the live entries are read and sorted, their tree is
// built, entries and tree are stored in Postgres with the root and the state closed in one
// fenced transaction, and the root is written to the draw hash. The seed is not read.
func (r *Runner) close(ctx context.Context, sale string, held lock.Held) (*fixedEntries, error) {
	_, closedAt, err := lua.DrawCloseCall{Sale: sale}.Run(ctx, r.Redis)
	if err != nil {
		if strings.Contains(err.Error(), "not set up") {
			return nil, r.notSetUp(ctx, sale)
		}
		return nil, fmt.Errorf("draw_close.lua: %w", err)
	}
	fixed, err := r.readEntries(ctx, sale)
	if err != nil {
		return nil, err
	}
	leaves := make([]drawmath.Hash, len(fixed.entries))
	for i, e := range fixed.entries {
		leaves[i] = drawmath.Leaf(e)
	}
	tree := drawmath.Build(leaves)
	root := tree.Root()
	rootHex := fmt.Sprintf("%x", root[:])
	counts := map[string]int{}
	for _, e := range fixed.entries {
		counts[e.Variant]++
	}
	key := lock.SaleKey(sale)
	err = lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
		// The sale's variants count too when nobody entered them: each is done on its own.
		rows, err := tx.Query(ctx, `SELECT variant_id FROM sale_variants WHERE sale_id = $1`, sale)
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			vs = []string{""} // a sale without variants: its entries name the variant ""
		}
		for _, v := range vs {
			counts[v] += 0
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"draw_entries"}, []string{"sale_id", "entry_id", "user_id", "variant", "idx", "leaf"},
			pgx.CopyFromSlice(len(fixed.entries), func(i int) ([]any, error) {
				e := fixed.entries[i]
				return []any{sale, e.ID, fixed.users[i], e.Variant, int32(i), leaves[i][:]}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy draw_entries: %w", err)
		}
		type node struct {
			level, idx int
			h          drawmath.Hash
		}
		var nodes []node
		for lv := 1; lv < len(tree.Levels); lv++ {
			for i, h := range tree.Levels[lv] {
				nodes = append(nodes, node{lv, i, h})
			}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"draw_nodes"}, []string{"sale_id", "level", "idx", "hash"},
			pgx.CopyFromSlice(len(nodes), func(i int) ([]any, error) {
				n := nodes[i]
				return []any{sale, int16(n.level), int32(n.idx), n.h[:]}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy draw_nodes: %w", err)
		}
		names, ns := make([]string, 0, len(counts)), make([]int32, 0, len(counts))
		for v, n := range counts {
			names, ns = append(names, v), append(ns, int32(n))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO draw_variants (sale_id, variant, entries) SELECT $1, v, n FROM unnest($2::text[], $3::int[]) AS x(v, n)`,
			sale, names, ns); err != nil {
			return err
		}
		// proof_version: the tree was built by this contract/draw (its ProofVersion).
		tag, err := tx.Exec(ctx, `UPDATE draws SET state = 'closed', entries = $2, entries_root = $3, closed_at = $4, proof_version = $5 WHERE sale_id = $1 AND state = 'open'`,
			sale, len(fixed.entries), rootHex, closedAt, drawmath.ProofVersion)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("draw %s: closed by someone else meanwhile", sale)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.publish(ctx, sale); err != nil {
		return nil, err
	}
	r.log().Info("draw closed", "sale_id", sale, "entries", len(fixed.entries), "root", rootHex)
	return fixed, nil
}

// notSetUp is why a draw hash holds no seed: ErrNotPreheated before the first preheat,
// lua.ErrSeedLost once a commitment is published (the draw stops for the operator).
func (r *Runner) notSetUp(ctx context.Context, sale string) error {
	var published bool
	if err := r.Pool.QueryRow(ctx, `SELECT seed_commitment IS NOT NULL FROM draws WHERE sale_id = $1`, sale).Scan(&published); err != nil {
		return err
	}
	if published {
		return fmt.Errorf("draw %s: no seed in Redis: %w", sale, lua.ErrSeedLost)
	}
	return ErrNotPreheated
}

// publish writes the fixed set's root, size and per-variant counts from Postgres to the draw
// hash (idempotent: the close writes them, a resumed draw writes them again). n:<variant> is
// from then on the exact count draw_wave.lua bounds the waves with.
func (r *Runner) publish(ctx context.Context, sale string) error {
	var entries int
	var root string
	if err := r.Pool.QueryRow(ctx, `SELECT entries, entries_root FROM draws WHERE sale_id = $1`, sale).Scan(&entries, &root); err != nil {
		return err
	}
	rows, err := r.Pool.Query(ctx, `SELECT variant, entries FROM draw_variants WHERE sale_id = $1`, sale)
	if err != nil {
		return err
	}
	fields := []any{"root", root, "entries", entries}
	var v string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&v, &n}, func() error {
		fields = append(fields, "n:"+v, n)
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.Redis.HSet(ctx, contract.DrawKey(sale), fields...).Err(); err != nil {
		return err
	}
	// The entries hash lives as long as the draw: the positions written into it must not
	// outlive the sale's keys (the edge gives it the same expiry; this makes sure of it).
	until, err := r.Redis.PExpireTime(ctx, contract.DrawKey(sale)).Result()
	if err != nil || until <= 0 {
		return err
	}
	return r.Redis.PExpireAt(ctx, contract.DrawEntriesKey(sale), time.UnixMilli(int64(until/time.Millisecond))).Err()
}
