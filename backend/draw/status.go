package draw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/lua"
)

// querier is what Status reads with: the pool, or a transaction.
type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Status is a sale's draw as the operator sees it (GET /admin/sales/{id}/draw): its state,
// entries per variant (Redis's live counters before the close, the fixed set after), root,
// commitment and waves with the orders each wave's winners placed. ErrNotDraw for a sale that
// is not a draw.
func (r *Runner) Status(ctx context.Context, q querier, sale string) (admin.DrawStatus, error) {
	st := admin.DrawStatus{SaleID: sale, EntriesByVariant: map[string]int64{}, Waves: []admin.DrawWaveStatus{}}
	var entries *int64
	var root, commitment *string
	err := q.QueryRow(ctx, `SELECT state, entries, entries_root, seed_commitment FROM draws WHERE sale_id = $1`, sale).
		Scan(&st.State, &entries, &root, &commitment)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, ErrNotDraw
	}
	if err != nil {
		return st, err
	}
	if commitment != nil {
		st.SeedCommitment = *commitment
	}
	if err := r.beaconStatus(ctx, q, sale, &st); err != nil {
		return st, err
	}
	if st.State == StateClosed && st.SeedCommitment != "" {
		seed, err := r.Redis.HGet(ctx, contract.DrawKey(sale), "seed").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return st, err
		}
		st.Stopped = seedLost(seed, st.SeedCommitment)
	}
	if st.State == StateOpen {
		h, err := r.Redis.HGetAll(ctx, contract.DrawKey(sale)).Result()
		if err != nil {
			return st, err
		}
		if st.SeedCommitment != "" {
			st.Stopped = seedLost(h["seed"], st.SeedCommitment)
		}
		for f, v := range h {
			if name, ok := strings.CutPrefix(f, "n:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				st.EntriesByVariant[name] = n
				st.Entries += n
			}
		}
		return st, nil
	}
	if entries != nil {
		st.Entries = *entries
	}
	if root != nil {
		st.Root = *root
	}
	rows, err := q.Query(ctx, `SELECT variant, entries FROM draw_variants WHERE sale_id = $1`, sale)
	if err != nil {
		return st, err
	}
	var v string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&v, &n}, func() error { st.EntriesByVariant[v] = n; return nil }); err != nil {
		return st, err
	}
	rows, err = q.Query(ctx, `SELECT w.variant, w.wave, w.lo, w.hi, w.at, w.claim_until,
			(SELECT count(*) FROM draw_entries e JOIN orders o ON o.sale_id = e.sale_id AND o.user_id = e.user_id
			 WHERE e.sale_id = w.sale_id AND e.variant = w.variant AND e.pos >= w.lo AND e.pos < w.hi
			   AND o.variant_id = w.variant AND o.status IN ('created', 'paid'))::int
		FROM draw_waves w WHERE w.sale_id = $1 ORDER BY w.variant, w.wave`, sale)
	if err != nil {
		return st, err
	}
	st.Waves, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (admin.DrawWaveStatus, error) {
		var w admin.DrawWaveStatus
		return w, row.Scan(&w.Variant, &w.Wave, &w.Lo, &w.Hi, &w.At, &w.ClaimUntil, &w.Claimed)
	})
	return st, err
}

// seedLost is the status's Stopped for a draw whose published commitment is commitment and
// whose draw hash holds seed ("" when it holds none): empty when the seed opens it.
func seedLost(seed, commitment string) string {
	switch {
	case seed == "":
		return "the seed of the published commitment is not in Redis: the draw cannot be drawn (a new seed would not open the commitment entrants saw); end the sale and tell its entrants"
	case !drawmath.Opens(seed, commitment):
		return "the seed in Redis does not open the published commitment: the draw cannot be drawn with it; end the sale and tell its entrants"
	}
	return ""
}

// beaconStatus fills the randomness, the beacon and, for a closed draw still without its
// round, what it waits for.
func (r *Runner) beaconStatus(ctx context.Context, q querier, sale string, st *admin.DrawStatus) error {
	row, err := readBeacon(ctx, q, sale)
	if err != nil {
		return err
	}
	st.Randomness = drawmath.RandomnessCommitReveal
	if row.beacon == nil {
		return nil
	}
	b := row.beacon
	st.Randomness = drawmath.RandomnessDrand
	st.Beacon = sales.AdminBeacon(b)
	if st.State != StateClosed || b.Signature != "" {
		return nil
	}
	due := b.RoundTime(b.Round)
	switch {
	case row.errorMsg != nil:
		st.Waiting = fmt.Sprintf("waiting for beacon round %d (due %s): %s", b.Round, due.Format(time.RFC3339), *row.errorMsg)
	default:
		st.Waiting = fmt.Sprintf("waiting for beacon round %d (due %s)", b.Round, due.Format(time.RFC3339))
	}
	return nil
}

// HandleStatus is GET /admin/sales/{id}/draw.
func (r *Runner) HandleStatus(w http.ResponseWriter, req *http.Request) {
	st, err := r.Status(req.Context(), r.Pool, req.PathValue("id"))
	if r.refuse(w, "draw status", err) {
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
}

// refuse answers err, if any: 404 for a sale that is no draw, 409 busy when another instance
// holds the sale's lock, 409 not_preheated for a draw without its seed, 409 seed_lost for a
// draw whose published commitment has no seed in Redis, 503 otherwise.
func (r *Runner) refuse(w http.ResponseWriter, what string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrNotDraw):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such draw sale")
	case errors.Is(err, lock.ErrBusy), errors.Is(err, lock.ErrFenced):
		httpapi.Refuse(w, http.StatusConflict, "busy", what+" is running on another instance; retry")
	case errors.Is(err, ErrNotPreheated):
		httpapi.Refuse(w, http.StatusConflict, "not_preheated", "preheat the sale first: its draw has no seed in Redis")
	case errors.Is(err, lua.ErrSeedLost):
		r.log().Error(what+" refused: the draw's seed is lost", "err", err)
		httpapi.Refuse(w, http.StatusConflict, httpapi.CodeSeedLost, "the seed of the draw's published commitment is not in Redis: the draw is stopped (docs/draw.md, \"A lost seed\")")
	default:
		r.log().Warn(what+" failed", "err", err)
		httpapi.Unavailable(w)
	}
	return true
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// HandleRun is POST /admin/sales/{id}/draw: run the draw now (closing the entries first when
// they are still open), audited like the operator's controls: the audit row (the draw before
// and after) is written under the sale's lock, fenced, once the draw has run.
func (r *Runner) HandleRun(w http.ResponseWriter, req *http.Request) {
	// The job is not tied to the request: an operator's client that gives up must not stop a
	// draw half-way (it would resume at the loop's next tick, but the answer is the draw).
	ctx, sale := context.WithoutCancel(req.Context()), req.PathValue("id")
	reqID := req.Header.Get("X-Request-ID")
	if !requestIDPattern.MatchString(reqID) {
		reqID = uuid.Must(uuid.NewV7()).String()
	}
	who, ok := httpapi.PrincipalFrom(ctx)
	if !ok {
		who = httpapi.Principal{Name: "unknown", Role: httpapi.RoleAdmin}
	}
	var after admin.DrawStatus
	key := lock.SaleKey(sale)
	err := lock.With(ctx, r.Locker, key, 5*time.Second, func(held lock.Held) error {
		before, err := r.Status(ctx, r.Pool, sale)
		if err != nil {
			return err
		}
		if err := r.runLocked(ctx, sale, held); err != nil && !errors.Is(err, ErrBeaconPending) {
			return err
		}
		return lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
			if after, err = r.Status(ctx, tx, sale); err != nil {
				return err
			}
			b, _ := json.Marshal(auditView(before))
			a, _ := json.Marshal(auditView(after))
			_, err := tx.Exec(ctx, `INSERT INTO audit_log (who, role, action, sale_id, before, after, request_id)
				VALUES ($1, $2, 'draw', $3, $4, $5, $6)`, who.Name, string(who.Role), sale, b, a, reqID)
			return err
		})
	})
	if r.refuse(w, "draw", err) {
		return
	}
	r.log().Info("sale control", "sale_id", sale, "action", "draw", "who", who.Name, "request_id", reqID)
	if after.Waiting != "" {
		// Closed, the ranking waits for its beacon round: the draw loop finishes it.
		httpapi.WriteJSON(w, http.StatusAccepted, after)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, after)
}

// auditView is the draw as the audit trail keeps it: the state and the counts, not every wave.
func auditView(st admin.DrawStatus) map[string]any {
	return map[string]any{"state": st.State, "entries": st.Entries, "root": st.Root, "waves": len(st.Waves)}
}
