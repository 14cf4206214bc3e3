// Package admin holds the admin API's wire types: the JSON bodies the backend's admin listener
// serves (GET /admin/sales, GET /admin/sales/{id}, GET /admin/audit) and the room a sale is created with. The
// backend serves them and seckillctl decodes them, so both import this package and neither
// imports the other: the CLI links no Postgres, RabbitMQ or tracing code.
//
// Everything here is pure data, its JSON decoding and the room's bounds; how the backend reads a
// sale, and what it hands the Lua scripts, stay in backend/.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
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
	// PerUserLimit is the most units a user may hold in the sale; Variants each variant's
	// stock in Postgres and Redis (absent for a sale without variants).
	PerUserLimit int             `json:"per_user_limit"`
	Variants     []VariantStatus `json:"variants,omitempty"`
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
	// Session is how long an admission lives unused (Go duration, >= 1s).
	Session string `json:"session,omitempty"`
	// Prequeue is how long before the start entries are taken (Go duration, >= 0).
	Prequeue string `json:"prequeue,omitempty"`
	// Difficulty is the proof-of-work [min, max] in bits; [0, 0] asks for none.
	Difficulty *Difficulty `json:"difficulty,omitempty"`
	// MaxWaiters is the most places the room holds (1..10 000 000); beyond it a new entry gets
	// 503 queue_full (issue 24).
	MaxWaiters *int64 `json:"max_waiters,omitempty"`
}

// Difficulty is a room's proof-of-work [min, max] in bits: exactly two numbers. A Go array
// alone would take [1, 2, 3] as [1, 2] and [5] as [5, 0] without a word (issue 24).
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
		name, v string
		min     time.Duration
	}{{"session", r.Session, time.Second}, {"prequeue", r.Prequeue, 0}} {
		if d.v == "" {
			continue
		}
		if v, err := time.ParseDuration(d.v); err != nil || v < d.min {
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
