package draw

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/lua"
)

// loadEntries reads the fixed entries back from Postgres in leaf order (a draw resumed by a
// job that did not run the close).
func (r *Runner) loadEntries(ctx context.Context, sale string) (*fixedEntries, error) {
	var n int
	if err := r.Pool.QueryRow(ctx, `SELECT entries FROM draws WHERE sale_id = $1`, sale).Scan(&n); err != nil {
		return nil, err
	}
	out := &fixedEntries{entries: make([]drawmath.Entry, 0, n), users: make([]string, 0, n)}
	rows, err := r.Pool.Query(ctx, `SELECT entry_id, variant, user_id FROM draw_entries WHERE sale_id = $1 ORDER BY idx`, sale)
	if err != nil {
		return nil, err
	}
	var e drawmath.Entry
	var user string
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.Variant, &user}, func() error {
		out.entries = append(out.entries, e)
		out.users = append(out.users, user)
		return nil
	})
	return out, err
}

// draw is the rest of step 4 once the root is published: read the seed, rank each variant,
// write each entry's position to Redis and Postgres, open wave 1 of every variant, reveal the
// seed. Each part is idempotent, so a draw stopped anywhere is finished by the next run.
func (r *Runner) draw(ctx context.Context, sale string, held lock.Held, fixed *fixedEntries) error {
	// With a beacon, the ranking waits for its round (ErrBeaconPending: the draw stays closed
	// and is tried again); asked first, so a draw that waits reads no entries each tick.
	beacon, err := r.beaconRound(ctx, sale, held)
	if err != nil {
		return err
	}
	if fixed == nil {
		// Resumed: the root may not have reached Redis before the stop.
		if err := r.publish(ctx, sale); err != nil {
			return err
		}
		if fixed, err = r.loadEntries(ctx, sale); err != nil {
			return err
		}
	}
	var commitment string
	if err := r.Pool.QueryRow(ctx, `SELECT coalesce(seed_commitment, '') FROM draws WHERE sale_id = $1`, sale).Scan(&commitment); err != nil {
		return err
	}
	seedHex, err := r.Redis.HGet(ctx, contract.DrawKey(sale), "seed").Result()
	if errors.Is(err, redis.Nil) {
		if commitment != "" {
			return fmt.Errorf("draw %s: no seed in Redis: %w", sale, lua.ErrSeedLost)
		}
		return ErrNotPreheated
	}
	if err != nil {
		return err
	}
	if commitment != "" && !drawmath.Opens(seedHex, commitment) {
		// Never draw with a seed other than the committed one: stop for the operator.
		return fmt.Errorf("draw %s: the seed in Redis does not open the published commitment: %w", sale, lua.ErrSeedLost)
	}
	seed, err := hex.DecodeString(seedHex)
	if err != nil {
		return fmt.Errorf("draw %s: seed: %w", sale, err)
	}
	// The ranking's seed: the committed seed, or with a beacon the effective seed of its round
	// (whose signature RankingSeed checks again: a stored round that no longer verifies stops
	// the draw for the operator, it never ranks without it).
	rankSeed, err := drawmath.RankingSeed(seed, beacon)
	if err != nil {
		return fmt.Errorf("draw %s: beacon: %w", sale, err)
	}
	index := make(map[string]int32, len(fixed.entries))
	for i, e := range fixed.entries {
		index[e.ID] = int32(i)
	}
	ranked := drawmath.RankVariants(rankSeed, fixed.entries)
	pos := make([]int32, len(fixed.entries))
	for _, rs := range ranked {
		for p, e := range rs {
			pos[index[e.ID]] = int32(p)
		}
	}
	// The positions go to Redis and to Postgres at once: the two stores work in parallel.
	redisDone := make(chan error, 1)
	go func() { redisDone <- r.writePositions(ctx, sale, fixed, pos) }()
	idx := make([]int32, len(pos))
	for i := range idx {
		idx[i] = int32(i)
	}
	key := lock.SaleKey(sale)
	err = lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE draw_entries e SET pos = p.pos FROM unnest($2::int[], $3::int[]) AS p(idx, pos)
			WHERE e.sale_id = $1 AND e.idx = p.idx AND e.pos IS DISTINCT FROM p.pos`, sale, idx, pos)
		return err
	})
	if rerr := <-redisDone; err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("draw %s: positions: %w", sale, err)
	}
	if err := r.stop("ranked"); err != nil {
		return err
	}
	if _, err := r.advance(ctx, sale, held); err != nil {
		return err
	}
	// The reveal: the seed becomes public with the result (Redis for the edge, Postgres for
	// the result page and the verifier).
	now, err := r.Redis.Time(ctx).Result()
	if err != nil {
		return err
	}
	if err := r.Redis.HSetNX(ctx, contract.DrawKey(sale), "drawn_ms", now.UnixMilli()).Err(); err != nil {
		return err
	}
	if err := r.Redis.HSet(ctx, contract.DrawKey(sale), "state", StateDrawn).Err(); err != nil {
		return err
	}
	drawnMs, err := r.Redis.HGet(ctx, contract.DrawKey(sale), "drawn_ms").Int64()
	if err != nil {
		return err
	}
	err = lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE draws SET seed = $2, state = 'drawn', drawn_at = $3 WHERE sale_id = $1 AND state = 'closed'`,
			sale, seedHex, time.UnixMilli(drawnMs))
		if err != nil {
			return err
		}
		// Every variant may be done at once (no stock, no entries): the draw is then done too.
		_, err = tx.Exec(ctx, `UPDATE draws SET state = 'done' WHERE sale_id = $1 AND state = 'drawn'
			AND NOT EXISTS (SELECT 1 FROM draw_variants WHERE sale_id = $1 AND done_at IS NULL)`, sale)
		return err
	})
	if err != nil {
		return err
	}
	randomness := drawmath.RandomnessCommitReveal
	if beacon != nil {
		randomness = drawmath.RandomnessDrand + " round " + strconv.FormatUint(beacon.Round, 10)
	}
	r.log().Info("draw drawn", "sale_id", sale, "entries", len(fixed.entries), "variants", len(ranked), "randomness", randomness)
	return nil
}

// writePositions writes each entry's position into the entries hash ("<eid>:<variant>:<pos>"),
// writeChunk fields an HSET, pipeDepth HSETs a round trip.
func (r *Runner) writePositions(ctx context.Context, sale string, fixed *fixedEntries, pos []int32) error {
	key := contract.DrawEntriesKey(sale)
	pipe := r.Redis.Pipeline()
	queued := 0
	fields := make([]any, 0, 2*writeChunk)
	flushSet := func() {
		if len(fields) > 0 {
			pipe.HSet(ctx, key, fields...)
			fields = make([]any, 0, 2*writeChunk)
			queued++
		}
	}
	for i, e := range fixed.entries {
		fields = append(fields, fixed.users[i], e.ID+":"+e.Variant+":"+strconv.Itoa(int(pos[i])))
		if len(fields) == 2*writeChunk {
			flushSet()
		}
		if queued == pipeDepth {
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
			queued = 0
		}
	}
	flushSet()
	if queued > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
