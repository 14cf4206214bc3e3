package sales

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	if b := s.Draw.Beacon; b != nil && !b.Off {
		if err := BeaconOf(b).ValidateChain(); err != nil {
			return fmt.Errorf("draw.beacon: %w", err)
		}
		if err := BeaconOf(b).CheckQuicknet(); err != nil {
			return fmt.Errorf("draw.beacon: %w", err)
		}
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

// BeaconOf is the chain an admin DrawBeacon names (the scheme defaults to drand's unchained
// G1, quicknet's, the only one a draw takes).
func BeaconOf(b *admin.DrawBeacon) draw.Beacon {
	out := draw.Beacon{ChainHash: b.ChainHash, PublicKey: b.PublicKey, Scheme: b.Scheme, Period: b.Period,
		GenesisTime: b.GenesisTime, Round: b.Round, Signature: b.Signature, Randomness: b.Randomness}
	if out.Scheme == "" {
		out.Scheme = draw.SchemeUnchainedG1
	}
	return out
}

// AdminBeacon is the admin views' form of a draw's beacon (nil: none).
func AdminBeacon(b *draw.Beacon) *admin.DrawBeacon {
	if b == nil {
		return nil
	}
	return &admin.DrawBeacon{ChainHash: b.ChainHash, PublicKey: b.PublicKey, Scheme: b.Scheme, Period: b.Period,
		GenesisTime: b.GenesisTime, Round: b.Round, Signature: b.Signature, Randomness: b.Randomness}
}

// ErrNoDrandEndpoint: a draw names a beacon the backend could never fetch.
var ErrNoDrandEndpoint = errors.New("draw.beacon: the backend has no drand endpoint (SECKILL_DRAND_URLS), so it could never draw this sale")

// beaconFor is the beacon a new draw names (docs/draw.md, "A public beacon"): the spec's chain,
// none when the spec says off, else the backend's default chain (none without one), with the
// first round published after closes_at. Nil: commit-reveal only.
func (s *Sales) beaconFor(d *admin.DrawSpec) (*draw.Beacon, error) {
	var b draw.Beacon
	switch {
	case d.Beacon != nil && d.Beacon.Off:
		return nil, nil
	case d.Beacon != nil:
		if !s.DrandEndpoints {
			return nil, ErrNoDrandEndpoint
		}
		b = BeaconOf(d.Beacon).Chain()
	case s.Beacon != nil:
		b = s.Beacon.Chain()
	default:
		return nil, nil
	}
	b.Round = b.DrawRound(d.ClosesAt)
	return &b, nil
}

// insertDraw writes the draws row of a new draw sale, in the sale's creation transaction, so a
// draw sale never exists without it; beacon is the one it names (nil: none).
func insertDraw(ctx context.Context, tx pgx.Tx, sale string, d *admin.DrawSpec, beacon *draw.Beacon) error {
	if d == nil {
		return nil
	}
	claim, _ := d.Claim() // checked by Validate
	var dmin, dmax int
	if d.Difficulty != nil {
		dmin, dmax = d.Difficulty[0], d.Difficulty[1]
	}
	var b []byte // NULL: commit-reveal only
	if beacon != nil {
		var err error
		if b, err = json.Marshal(beacon); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO draws (sale_id, opens_at, closes_at, claim_within_ms, dmin, dmax, beacon, waitlist) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`,
		sale, d.OpensAt, d.ClosesAt, claim.Milliseconds(), dmin, dmax, b, d.Waitlist)
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
	var beacon *draw.Beacon
	err := q.QueryRow(ctx, `SELECT opens_at, closes_at, claim_within_ms, dmin, dmax, seed_commitment, beacon, waitlist FROM draws WHERE sale_id = $1`, sale).
		Scan(&d.spec.OpensAt, &d.spec.ClosesAt, &claimMs, &dmin, &dmax, &d.commitment, &beacon, &d.spec.Waitlist)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d.spec.ClaimWithin = admin.Duration((time.Duration(claimMs) * time.Millisecond).String())
	if dmin != 0 || dmax != 0 {
		d.spec.Difficulty = &admin.Difficulty{dmin, dmax}
	}
	d.spec.Beacon = AdminBeacon(beacon)
	return &d, nil
}

// PreheatDraw gives a draw sale its draw hash: it draws the secret seed (crypto/rand, 32 bytes)
// and runs draw_setup.lua, which keeps the first seed when the draw exists (a second preheat
// publishes the same commitment). until is when the hash expires (the sale's end plus
// retention); published is the commitment an earlier preheat published ("" before the first):
// when the draw hash does not hold its seed, nothing is written and the error is
// lua.ErrSeedLost, never a new seed under a new commitment. The backend's preheat calls it under
// the sale's lock BEFORE preheat.lua, which writes a draw sale's meta only when the draw hash
// holds a seed. The seed never leaves Redis before the draw; the commitment is public from now on.
func PreheatDraw(ctx context.Context, rdb redis.Scripter, sale string, spec admin.DrawSpec, until time.Time, published string) (admin.RoomPreheat, error) {
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
		Opens: spec.OpensAt, Closes: spec.ClosesAt, Claim: claim, Until: until, Published: published, Waitlist: spec.Waitlist}
	if spec.Difficulty != nil {
		call.DMin, call.DMax = spec.Difficulty[0], spec.Difficulty[1]
	}
	created, commitment, err := call.Run(ctx, rdb)
	if err != nil {
		return res, fmt.Errorf("draw %s: draw_setup.lua: %w", sale, err)
	}
	return admin.RoomPreheat{Created: created, SeedCommitment: commitment}, nil
}
