// Package admin holds the admin API's wire types: the JSON bodies the backend's admin listener
// serves (the sales list and status, the answers of preheat, reconcile, rebalance and every
// control, the audit trail) and the room a sale is created with. The backend serves them and
// seckillctl decodes them, so both import this package and neither imports the other: the CLI
// links no Postgres, RabbitMQ or tracing code.
//
// Everything here is pure data, its JSON decoding and the room's bounds; how the backend reads a
// sale, and what it hands the Lua scripts, stay in backend/.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Sale states as the operator sees them (GET /admin/sales, the live page, seckillctl).
const (
	SaleScheduled = "scheduled" // before starts_at
	SaleOpen      = "open"      // selling
	SalePaused    = "paused"    // the operator paused it: the gateways refuse with 503 paused
	SaleSoldOut   = "sold_out"  // no unit left (adding stock reopens it)
	SaleEnded     = "ended"     // at or after ends_at: final, no control applies
)

// MaxStock is the most units a sale holds, all variants together, and so the most a variant
// holds or one stock change adds. The stock columns are Postgres integers (up to 2^31 - 1): a
// bound well inside them, checked at the API, refuses a creation or a stock change that would
// not fit as the client's 400 instead of the database's error.
const MaxStock = 1_000_000_000

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

// SaleStatus is the body of GET /admin/sales/{id}.
type SaleStatus struct {
	ID           string         `json:"id"`
	InitialStock int            `json:"initial_stock"`
	StockDB      int            `json:"stock_db"`
	StockRedis   *int64         `json:"stock_redis"`
	State        string         `json:"state,omitempty"`
	Buyers       int64          `json:"buyers"`
	Queued       int            `json:"queued"`
	Orders       map[string]int `json:"orders"`
	StartsAt     time.Time      `json:"starts_at"`
	EndsAt       time.Time      `json:"ends_at"`
	PayWithin    string         `json:"pay_within"`
	// Shards is the sale's shard count (1: unsharded). For a sharded sale, StockRedis and
	// Buyers sum over the shards and ShardStock lists each shard's stock (-1: not in Redis).
	Shards     int     `json:"shards"`
	ShardStock []int64 `json:"shard_stock,omitempty"`
	// Room is the sale's waiting room as created (nil: none) and SeedCommitment the hex SHA-256
	// of its seed once preheated (docs/room.md): published before the start, checked after the end.
	Room           *RoomSpec `json:"room,omitempty"`
	SeedCommitment string    `json:"seed_commitment,omitempty"`
	// Lanes is each lane's counters (entries, admitted) when the room has lanes.
	Lanes map[string]map[string]int64 `json:"lanes,omitempty"`
	// PerUserLimit is the most units a user may hold in the sale; Variants each variant's
	// stock in Postgres and Redis (absent for a sale without variants).
	PerUserLimit int             `json:"per_user_limit"`
	Variants     []VariantStatus `json:"variants,omitempty"`
	// Draw is the sale's draw as created (nil: not a draw sale); SeedCommitment is then the
	// draw's commitment once preheated (docs/draw.md).
	Draw *DrawSpec `json:"draw,omitempty"`
}

// VariantStatus is one variant in GET /admin/sales/{id}: its stock in Postgres and in Redis
// (nil: not in Redis).
type VariantStatus struct {
	ID           string `json:"id"`
	InitialStock int    `json:"initial_stock"`
	StockDB      int    `json:"stock_db"`
	StockRedis   *int64 `json:"stock_redis"`
}

// RoomSpec is a sale's waiting room, `"room": {...}` in POST /admin/sales (docs/room.md).
// Every field is optional: an absent one leaves the gateways' seckill_room default.
type RoomSpec struct {
	// Rate is admissions per second (0.001 to 1e6: room_setup.lua's bounds).
	Rate *float64 `json:"rate,omitempty"`
	// Oversubscribe is live admissions per remaining unit (>= 1).
	Oversubscribe *float64 `json:"oversubscribe,omitempty"`
	// Session is how long an admission lives unused (>= 1s).
	Session Duration `json:"session,omitempty"`
	// Prequeue is how long before the start entries are taken (>= 0).
	Prequeue Duration `json:"prequeue,omitempty"`
	// Difficulty is the proof-of-work [min, max] in bits; [0, 0] asks for none.
	Difficulty *Difficulty `json:"difficulty,omitempty"`
	// MaxWaiters is the most places the room holds (1..10 000 000); beyond it a new entry gets
	// 503 queue_full.
	MaxWaiters *int64 `json:"max_waiters,omitempty"`
	// Waitlist hands a unit released after the sell-out (an unpaid order's timeout, a failed
	// order) to the room's next present waiter instead of the open pool, and keeps the waiters
	// waiting while a buyer has not paid yet (docs/room.md, "The waitlist"). false: a released
	// unit goes back to the pool, and the waiters are told sold_out at the sell-out.
	Waitlist bool `json:"waitlist,omitempty"`
	// Lanes splits the room into lanes (docs/room.md, "Lanes"): each lane its own queue,
	// ranked by the room's committed seed, and its share of the admission rate (or a strict
	// priority). Absent: one queue, as a room without lanes.
	Lanes []LaneSpec `json:"lanes,omitempty"`
	// LaneMode is "share" (the default: each lane admits its share of the rate, a lane
	// without waiters passes its share on) or "priority" (the lanes in their order: a lane
	// admits only while every lane before it has no one left to admit).
	LaneMode string `json:"lane_mode,omitempty"`
}

// LaneSpec is one lane of a room.
type LaneSpec struct {
	// Name: ^[a-z0-9_-]{1,16}$, unique in the sale.
	Name string `json:"name"`
	// Kind: "claim" (users whose verified identity carries Claim), "invitation" (entries that
	// spend an invitation code issued through POST /admin/sales/{id}/invitations) or "public"
	// (everyone else; exactly one lane of a room with lanes is public).
	Kind string `json:"kind"`
	// Claim (kind claim): the claim value the gateway's `lane_claims` placeholder must hold
	// (^[A-Za-z0-9_.-]{1,64}$).
	Claim string `json:"claim,omitempty"`
	// Share (mode share): the lane's part of the admission rate, 0 < share <= 1; the shares
	// of a room's lanes add up to 1.
	Share float64 `json:"share,omitempty"`
}

// Lane kinds and modes.
const (
	LaneClaim      = "claim"
	LaneInvitation = "invitation"
	LanePublic     = "public"
	LaneModeShare  = "share"
	LaneModePrio   = "priority"
	// MaxLanes bounds a room's lanes (each is a queue the admission step walks).
	MaxLanes = 8
)

var laneName = regexp.MustCompile(`^[a-z0-9_-]{1,16}$`)
var laneClaim = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// validateLanes checks a room's lanes: names, kinds, one public lane, at most one invitation
// lane, distinct claims, and shares adding up to 1 (within 1e-6) in mode share.
func (r RoomSpec) validateLanes() error {
	if len(r.Lanes) == 0 {
		if r.LaneMode != "" {
			return errors.New("room.lane_mode needs room.lanes")
		}
		return nil
	}
	if r.LaneMode != "" && r.LaneMode != LaneModeShare && r.LaneMode != LaneModePrio {
		return errors.New(`room.lane_mode is "share" or "priority"`)
	}
	if len(r.Lanes) > MaxLanes {
		return fmt.Errorf("room.lanes holds at most %d lanes", MaxLanes)
	}
	names, claims := map[string]bool{}, map[string]bool{}
	publics, invitations := 0, 0
	sum := 0.0
	for i, l := range r.Lanes {
		if !laneName.MatchString(l.Name) || names[l.Name] {
			return fmt.Errorf("room.lanes[%d].name must match ^[a-z0-9_-]{1,16}$ and be unique", i)
		}
		names[l.Name] = true
		switch l.Kind {
		case LaneClaim:
			if !laneClaim.MatchString(l.Claim) || claims[l.Claim] {
				return fmt.Errorf("room.lanes[%d].claim must match ^[A-Za-z0-9_.-]{1,64}$ and be unique", i)
			}
			claims[l.Claim] = true
		case LaneInvitation:
			invitations++
		case LanePublic:
			publics++
		default:
			return fmt.Errorf(`room.lanes[%d].kind is "claim", "invitation" or "public"`, i)
		}
		if l.Kind != LaneClaim && l.Claim != "" {
			return fmt.Errorf("room.lanes[%d].claim is for a lane of kind claim", i)
		}
		if r.LaneMode == LaneModePrio {
			if l.Share != 0 {
				return fmt.Errorf("room.lanes[%d].share has no meaning in mode priority", i)
			}
			continue
		}
		if !(l.Share > 0 && l.Share <= 1) {
			return fmt.Errorf("room.lanes[%d].share must be above 0 and at most 1", i)
		}
		sum += l.Share
	}
	if publics != 1 {
		return errors.New("room.lanes needs exactly one lane of kind public")
	}
	if invitations > 1 {
		return errors.New("room.lanes holds at most one lane of kind invitation")
	}
	if r.LaneMode != LaneModePrio && math.Abs(sum-1) > 1e-6 {
		return errors.New("room.lanes' shares must add up to 1")
	}
	return nil
}

// LanesField is the room hash's "lanes" field for these lanes (room_setup.lua, room_queue.lua):
// the mode, then per lane "name:kind:share:claim", joined by ",". "" for a room without lanes.
func (r RoomSpec) LanesField() string {
	if len(r.Lanes) == 0 {
		return ""
	}
	mode := r.LaneMode
	if mode == "" {
		mode = LaneModeShare
	}
	parts := []string{mode}
	for _, l := range r.Lanes {
		parts = append(parts, l.Name+":"+l.Kind+":"+strconv.FormatFloat(l.Share, 'f', -1, 64)+":"+l.Claim)
	}
	return strings.Join(parts, ",")
}

// ParseLanesField reads a room hash's "lanes" field back (LanesField's inverse): the mode and
// the lanes in their order. ok is false for "" (no lanes) and for a field of another shape.
func ParseLanesField(field string) (mode string, lanes []LaneSpec, ok bool) {
	parts := strings.Split(field, ",")
	if field == "" || len(parts) < 2 {
		return "", nil, false
	}
	for _, p := range parts[1:] {
		f := strings.SplitN(p, ":", 4)
		if len(f) != 4 || f[0] == "" {
			return "", nil, false
		}
		share, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return "", nil, false
		}
		lanes = append(lanes, LaneSpec{Name: f[0], Kind: f[1], Share: share, Claim: f[3]})
	}
	return parts[0], lanes, true
}

// InvitationRequest is the body of POST /admin/sales/{id}/invitations: Count new codes (1 to
// 10 000), each good for Uses entries (1 to 1 000 000).
type InvitationRequest struct {
	Count int   `json:"count"`
	Uses  int64 `json:"uses"`
}

// Invitations is its answer: the codes, shown this once (Redis keeps only their SHA-256).
type Invitations struct {
	Lane  string   `json:"lane"`
	Uses  int64    `json:"uses"`
	Codes []string `json:"codes"`
}

// Difficulty is a room's proof-of-work [min, max] in bits: exactly two numbers. A Go array
// alone would take [1, 2, 3] as [1, 2] and [5] as [5, 0] without a word.
type Difficulty [2]int

// UnmarshalJSON takes exactly two integers.
func (d *Difficulty) UnmarshalJSON(b []byte) error {
	var v []int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if len(v) != 2 {
		return fmt.Errorf("room.difficulty is [min, max]: two numbers, not %d", len(v))
	}
	*d = Difficulty{v[0], v[1]}
	return nil
}

// MinRoomRate is room_setup.lua's lowest rate: a sale accepted by the API must be one preheat
// can give its room (a refused room keeps the whole sale out of Redis).
const MinRoomRate = 0.001

// Validate checks a room spec with the bounds room_setup.lua enforces; the error names the
// field (room.<field>). The backend turns a valid spec into the script's arguments.
func (r RoomSpec) Validate() error {
	if err := r.validateLanes(); err != nil {
		return err
	}
	if r.MaxWaiters != nil && (*r.MaxWaiters < 1 || *r.MaxWaiters > 10_000_000) {
		return errors.New("room.max_waiters must be between 1 and 10000000 places")
	}
	if r.Rate != nil && !(*r.Rate >= MinRoomRate && *r.Rate <= 1e6) {
		return errors.New("room.rate must be between 0.001 and 1e6 admissions per second")
	}
	if r.Oversubscribe != nil && (*r.Oversubscribe < 1 || *r.Oversubscribe > 100) {
		return errors.New("room.oversubscribe must be between 1 and 100")
	}
	for _, d := range []struct {
		name string
		v    Duration
		min  time.Duration
	}{{"session", r.Session, time.Second}, {"prequeue", r.Prequeue, 0}} {
		if d.v == "" {
			continue
		}
		if v, err := d.v.Parse(); err != nil || v < d.min {
			return fmt.Errorf("room.%s must be a duration of at least %v", d.name, d.min)
		}
	}
	if r.Difficulty != nil {
		lo, hi := r.Difficulty[0], r.Difficulty[1]
		if lo < 0 || hi < lo || hi > 40 {
			return errors.New("room.difficulty is [min, max] bits with 0 <= min <= max <= 40")
		}
	}
	return nil
}

// AuditEntry is one row of the audit trail (GET /admin/audit, the live page): who ran which control on which sale, when, with
// the sale before and after it (JSON) and the request id that names the step.
type AuditEntry struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	Who       string          `json:"who"`
	Role      string          `json:"role"`
	Action    string          `json:"action"`
	SaleID    string          `json:"sale_id"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
	RequestID string          `json:"request_id"`
}

// ControlResult is the answer of every control: what was done, under which request id, and
// the sale afterwards.
type ControlResult struct {
	Action    string      `json:"action"`
	RequestID string      `json:"request_id"`
	Sale      SaleSummary `json:"sale"`
	// Replayed: the request id had been applied before; nothing was changed this time.
	Replayed bool `json:"replayed,omitempty"`
	// Reconcile is set when an interrupted stock change was completed: Redis was then
	// reconciled with Postgres (the source of truth), whatever happened in between.
	Reconcile *ReconcileReport `json:"reconcile,omitempty"`
	// Variant is the variant a stock change named, after the change (the sale's totals are
	// in Sale).
	Variant *VariantStatus `json:"variant,omitempty"`
}

// ReconcileReport is the body of POST /admin/sales/{id}/reconcile: what was found and done.
type ReconcileReport struct {
	SaleID string `json:"sale_id"`
	// StockDB is the Postgres stock at the snapshot.
	StockDB int `json:"stock_db"`
	// StockRedisBefore / After: the Redis stock at the snapshot and after the repair.
	StockRedisBefore int64 `json:"stock_redis_before"`
	StockRedisAfter  int64 `json:"stock_redis_after"`
	// InFlight counts buyers whose order is not in Postgres yet but still within the grace
	// period (their message may be in the outbox or the queue).
	InFlight int `json:"in_flight"`
	// LostFailed are buyers past the grace period with no order: recorded failed
	// (lost_in_transit) and their units returned to Redis.
	LostFailed []string `json:"lost_failed"`
	// Compensated counts failed or cancelled orders whose unit Redis still counted as sold.
	Compensated int `json:"compensated"`
	// BuyersRestored are users with a created or paid order that Redis had forgotten (they
	// could have bought again).
	BuyersRestored []string `json:"buyers_restored"`
	// StockDelta is what was added to the Redis stock to make it agree with Postgres.
	StockDelta int64 `json:"stock_delta"`
	// Actions lists, in words, what was repaired; empty when everything agreed.
	Actions []string `json:"actions"`
	// Rebalance is what the rebalance that follows the repair of a sharded sale did.
	Rebalance *RebalanceReport `json:"rebalance,omitempty"`
}

// PreheatResult is the body of POST /admin/sales/{id}/preheat.
type PreheatResult struct {
	SaleID     string `json:"sale_id"`
	Created    bool   `json:"created"`
	StockRedis int64  `json:"stock_redis"`
	// Room is set for a sale with a waiting room: its seed commitment (kept by later preheats).
	Room *RoomPreheat `json:"room,omitempty"`
	// Draw is set for a draw sale: its seed commitment (kept by later preheats).
	Draw *RoomPreheat `json:"draw,omitempty"`
}

// RoomPreheat is what preheating a room did.
type RoomPreheat struct {
	// Created is true when this call drew the seed (a later preheat keeps it).
	Created bool `json:"created"`
	// SeedCommitment is the hex SHA-256 of the seed: published now, checked at the end.
	SeedCommitment string `json:"seed_commitment"`
}

// RebalanceReport is the body of POST /admin/sales/{id}/rebalance.
type RebalanceReport struct {
	SaleID string `json:"sale_id"`
	Shards int    `json:"shards"`
	// StocksBefore / After: each shard's Redis stock before the moves and after them.
	StocksBefore []int64 `json:"stocks_before"`
	StocksAfter  []int64 `json:"stocks_after"`
	// Moves are the transfers made (units actually taken: buyers may have taken some first).
	Moves []Move `json:"moves"`
	// Finished counts moves an earlier, interrupted rebalance had journaled and this one
	// completed.
	Finished int `json:"finished"`
	// Variants, on a sale with variants, are each variant's units per shard before and after
	// (StocksBefore / After stay the shards' totals).
	Variants []VariantRebalance `json:"variants,omitempty"`
}

// Move is one transfer of units between two shards of a sale.
type Move struct {
	From  int `json:"from"`
	To    int `json:"to"`
	Units int `json:"units"`
	// Variant is the variant whose units moved, on a sale with variants (which moves units
	// one variant at a time); absent on a single-stock sale.
	Variant string `json:"variant,omitempty"`
}

// VariantRebalance is one variant's units in each shard before and after a rebalance.
type VariantRebalance struct {
	ID           string  `json:"id"`
	StocksBefore []int64 `json:"stocks_before"`
	StocksAfter  []int64 `json:"stocks_after"`
}

// DrawSpec puts a sale in draw mode, `"draw": {...}` in POST /admin/sales (DESIGN.md, "Draws";
// docs/draw.md): entries are taken in [OpensAt, ClosesAt), the winners of each variant are drawn
// at the close and each buys within ClaimWithin of his wave's start.
type DrawSpec struct {
	OpensAt  time.Time `json:"opens_at"`
	ClosesAt time.Time `json:"closes_at"`
	// ClaimWithin is how long a winner has to buy (>= 1s).
	ClaimWithin Duration `json:"claim_within"`
	// Difficulty is the entry's proof-of-work [min, max] in bits, as a room's; absent or
	// [0, 0]: none.
	Difficulty *Difficulty `json:"difficulty,omitempty"`
	// Beacon is the draw's public beacon (docs/draw.md, "A public beacon"). Absent: the
	// backend's chain (SECKILL_DRAND_*), if it has one; {"off": true}: none, the draw is
	// commit-reveal only; a chain (chain_hash, public_key, period, genesis_time, scheme
	// optional): that one. The round is never given: it is computed, the first after closes_at,
	// and shown here once the sale exists.
	Beacon *DrawBeacon `json:"beacon,omitempty"`
	// Waitlist hands a unit a winner released (an unpaid order's timeout, a cancellation, a
	// refused payment) to the next rank of its size at once, by raising the current wave's
	// upper rank by one, instead of keeping it for the next wave (docs/draw.md, "The
	// waitlist"). false: a released unit waits for the next wave.
	Waitlist bool `json:"waitlist,omitempty"`
}

// DrawBeacon is a draw's drand beacon as POST /admin/sales names it and the admin views show
// it (contract/draw.Beacon, plus Off). Round, Signature and Randomness are outputs.
type DrawBeacon struct {
	// Off: no beacon for this draw even when the backend has a default chain.
	Off         bool   `json:"off,omitempty"`
	ChainHash   string `json:"chain_hash,omitempty"`
	PublicKey   string `json:"public_key,omitempty"`
	Scheme      string `json:"scheme,omitempty"`
	Period      int    `json:"period,omitempty"`
	GenesisTime int64  `json:"genesis_time,omitempty"`
	Round       uint64 `json:"round,omitempty"`
	Signature   string `json:"signature,omitempty"`
	Randomness  string `json:"randomness,omitempty"`
}

// Validate checks a draw spec on its own; the error names the field (draw.<field>). What
// depends on the rest of the sale (closes_at <= starts_at, no room, unsharded, a per-user
// limit of 1) is checked with the sale (backend/sales).
func (d DrawSpec) Validate() error {
	switch {
	case d.OpensAt.IsZero():
		return errors.New("draw.opens_at (RFC 3339) is required")
	case d.ClosesAt.IsZero():
		return errors.New("draw.closes_at (RFC 3339) is required")
	case !d.ClosesAt.After(d.OpensAt):
		return errors.New("draw.closes_at must be after draw.opens_at")
	}
	if _, err := d.Claim(); err != nil {
		return err
	}
	if d.Difficulty != nil {
		lo, hi := d.Difficulty[0], d.Difficulty[1]
		if lo < 0 || hi < lo || hi > 40 {
			return errors.New("draw.difficulty is [min, max] bits with 0 <= min <= max <= 40")
		}
	}
	if b := d.Beacon; b != nil {
		chain := b.ChainHash != "" || b.PublicKey != "" || b.Scheme != "" || b.Period != 0 || b.GenesisTime != 0
		switch {
		case b.Round != 0 || b.Signature != "" || b.Randomness != "":
			return errors.New("draw.beacon: round, signature and randomness are not given: the round is the first after closes_at")
		case b.Off && chain:
			return errors.New("draw.beacon: either {\"off\": true} or a chain, not both")
		case !b.Off && (b.ChainHash == "" || b.PublicKey == "" || b.Period == 0 || b.GenesisTime == 0):
			return errors.New("draw.beacon: a chain needs chain_hash, public_key, period and genesis_time (or {\"off\": true})")
		}
	}
	return nil
}

// Claim is ClaimWithin parsed: a duration of at least a second (the draw's claim window).
func (d DrawSpec) Claim() (time.Duration, error) {
	v, err := d.ClaimWithin.Parse()
	if err != nil || v < time.Second {
		return 0, errors.New("draw.claim_within must be a duration of at least 1s")
	}
	return v, nil
}

// DrawStatus is the body of GET /admin/sales/{id}/draw and of POST /admin/sales/{id}/draw
// once the draw has run (docs/draw.md, "Shapes shared by the parts").
type DrawStatus struct {
	SaleID string `json:"sale_id"`
	// State is open, closed, drawn or done (docs/draw.md, "Postgres").
	State string `json:"state"`
	// Entries are the live entries: Redis's counters before the close, the fixed set after.
	Entries          int64            `json:"entries"`
	EntriesByVariant map[string]int64 `json:"entries_by_variant"`
	// Root is the Merkle root of the entries, from the close on.
	Root           string `json:"root,omitempty"`
	SeedCommitment string `json:"seed_commitment"`
	// Waves lists every wave of every variant, by variant then wave.
	Waves []DrawWaveStatus `json:"waves"`
	// Randomness is "commit-reveal" (no beacon: the seed alone ranks) or
	// "commit-reveal+drand" (the seed and Beacon's round); Beacon is null for the first.
	Randomness string      `json:"randomness"`
	Beacon     *DrawBeacon `json:"beacon"`
	// Waiting says why a closed draw has not drawn yet: "waiting for beacon round N ..." with
	// the round's time or the last failure to fetch it (absent otherwise).
	Waiting string `json:"waiting,omitempty"`
	// Stopped says why the draw cannot go on without the operator: the seed of its published
	// commitment is not in Redis (absent otherwise). A new seed would not open the commitment
	// entrants saw, so the draw is never drawn with one (docs/draw.md, "A lost seed").
	Stopped string `json:"stopped,omitempty"`
}

// DrawWaveStatus is one wave of one variant: positions [Lo, Hi) of the variant's ranking won,
// to buy before ClaimUntil; Claimed counts the orders of that variant by the wave's winners.
type DrawWaveStatus struct {
	Variant    string    `json:"variant"`
	Wave       int       `json:"wave"`
	Lo         int       `json:"lo"`
	Hi         int       `json:"hi"`
	At         time.Time `json:"at"`
	ClaimUntil time.Time `json:"claim_until"`
	Claimed    int       `json:"claimed"`
}
