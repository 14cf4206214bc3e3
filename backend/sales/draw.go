package sales

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/lua"
)

// validateDraw checks what a draw asks of the rest of the sale (docs/draw.md, Lifecycle step 1):
// the entries close no later than the sale opens, one unit per user, no room, one shard.
func (s SaleSpec) validateDraw() error {
	if s.Draw == nil {
		return nil
	}
	if err := s.Draw.Validate(); err != nil {
		return err
	}
	switch {
	case s.Draw.ClosesAt.After(s.StartsAt):
		return errors.New("draw.closes_at must not be after starts_at: the purchase window starts after the draw")
	case s.Room != nil:
		return errors.New("room: a draw sale has no room")
	case s.Shards > 1:
		return errors.New("shards: a draw sale is unsharded (shards 0 or 1)")
	case s.PerUserLimit > 1:
		return errors.New("per_user_limit: a draw sale sells one unit per user (absent or 1)")
	}
	return nil
}

// insertDraw writes the draws row of a new draw sale, in the sale's creation transaction, so a
// draw sale never exists without it.
func insertDraw(ctx context.Context, tx pgx.Tx, sale string, d *admin.DrawSpec) error {
	if d == nil {
		return nil
	}
	claim, _ := d.Claim() // checked by Validate
	var dmin, dmax int
	if d.Difficulty != nil {
		dmin, dmax = d.Difficulty[0], d.Difficulty[1]
	}
	_, err := tx.Exec(ctx, `INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, dmin, dmax) VALUES ($1, $2, $3, $4, $5, $6)`,
		sale, d.OpensAt, d.ClosesAt, claim.Milliseconds(), dmin, dmax)
	return err
}

// drawRow is a draws row as preheat and the status read it.
type drawRow struct {
	spec       admin.DrawSpec
	commitment *string
}

// readDraw reads a sale's draws row; nil when the sale is not a draw.
func readDraw(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sale string) (*drawRow, error) {
	var d drawRow
	var claimMs int64
	var dmin, dmax int
	err := q.QueryRow(ctx, `SELECT opens_at, closes_at, claim_within_ms, dmin, dmax, seed_commitment FROM draws WHERE sale_id = $1`, sale).
		Scan(&d.spec.OpensAt, &d.spec.ClosesAt, &claimMs, &dmin, &dmax, &d.commitment)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d.spec.ClaimWithin = (time.Duration(claimMs) * time.Millisecond).String()
	if dmin != 0 || dmax != 0 {
		d.spec.Difficulty = &admin.Difficulty{dmin, dmax}
	}
	return &d, nil
}

// PreheatDraw gives a draw sale its draw hash: it draws the secret seed (crypto/rand, 32 bytes)
// and runs draw_setup.lua, which keeps the first seed when the draw exists (a second preheat
// publishes the same commitment). until is when the hash expires (the sale's end plus
// retention). The backend's preheat calls it under the sale's lock BEFORE preheat.lua, which
// writes a draw sale's meta only when the draw hash holds a seed. The seed never leaves Redis
// before the draw; the commitment is public from now on.
func PreheatDraw(ctx context.Context, rdb redis.Scripter, sale string, spec admin.DrawSpec, until time.Time) (admin.RoomPreheat, error) {
	var res admin.RoomPreheat
	claim, err := spec.Claim()
	if err != nil {
		return res, err
	}
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return res, err
	}
	call := lua.DrawSetupCall{Sale: sale, Seed: hex.EncodeToString(seed), Commitment: draw.Commitment(seed),
		Opens: spec.OpensAt, Closes: spec.ClosesAt, Claim: claim, Until: until}
	if spec.Difficulty != nil {
		call.DMin, call.DMax = spec.Difficulty[0], spec.Difficulty[1]
	}
	created, commitment, err := call.Run(ctx, rdb)
	if err != nil {
		return res, fmt.Errorf("draw_setup.lua: %w", err)
	}
	return admin.RoomPreheat{Created: created, SeedCommitment: commitment}, nil
}
