package lua

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// GateCall is one call of gate.lua: its keys and its ARGV in the order the script reads them
// (append-only: ARGV[6] is the tracing slot, ARGV[7] the variant, ARGV[8] the quantity,
// ARGV[9] the waiting-room flag).
type GateCall struct {
	Sale        string // sale id, or the shard id of the user's shard
	User        string
	OrderID     string
	TokenValue  string // "<nonce>:<exp_ms>" of the presented token; "" when none is required
	Group       string // the relay's consumer group
	TraceParent string // W3C traceparent; "" when none
	Variant     string // "" for none
	Quantity    int    // 0 for the default (1)
	// Admission: this gateway enforces the waiting room (seckill_gate require_admission). A
	// sale with a room then sells only to a user with a live admission; without it such a
	// sale is refused (misconfigured), never sold around its room.
	Admission bool
}

// Keys are the call's KEYS: meta, buyers, tokens, outbox, held, room, room:live.
func (c GateCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale), contract.TokensKey(c.Sale),
		contract.OutboxKey(c.Sale), contract.HeldKey(c.Sale), contract.RoomKey(c.Sale), contract.RoomLiveKey(c.Sale)}
}

// Args are the call's ARGV.
func (c GateCall) Args() []any {
	q := ""
	if c.Quantity != 0 {
		q = strconv.Itoa(c.Quantity)
	}
	admission := ""
	if c.Admission {
		admission = "1"
	}
	return []any{c.Sale, c.User, c.OrderID, c.TokenValue, c.Group, c.TraceParent, c.Variant, q, admission}
}

// Run runs gate.lua (EVALSHA, EVAL on NOSCRIPT) and returns its raw reply.
func (c GateCall) Run(ctx context.Context, rdb redis.Scripter) ([]any, error) {
	return Gate.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
}

// Variant is one variant of a sale and its units.
type Variant struct {
	ID    string `json:"id"`
	Stock int64  `json:"stock"`
}

// PreheatArgs are the arguments of preheat.lua (see its header).
type PreheatArgs struct {
	Sale  string // sale id, or a shard id
	Stock int64  // ignored when Variants are given: the stock is then their sum
	// Starts and Ends are the sale's window.
	Starts, Ends time.Time
	// Reset sets the stock (and limit and variants) even when the sale is in Redis already
	// (the backend's reconcile, under its lock); otherwise only a new hash is written.
	Reset bool
	// Retention is how long the meta key outlives Ends.
	Retention time.Duration
	// Shards > 1 writes a sharded sale's base hash (no stock, no variants).
	Shards int
	// Namespace is the deployment's namespace ("" for the unnamed one).
	Namespace string
	// Limit is the per-user limit in units; 0 or 1 means 1.
	Limit int
	// Variants, when not empty, are the sale's variants (each shard's part, on a shard).
	Variants []Variant
	// Room: the sale has a waiting room, set up already (room_setup.lua runs first). The
	// script refuses to write the sale when the room hash has no seed, and marks the meta
	// hash "room" = 1, which the token and gate scripts enforce. Unsharded sales only.
	Room bool
}

// Keys are the call's KEYS: the meta hash, and the room hash when the sale has a room.
func (a PreheatArgs) Keys() []string {
	if a.Room {
		return []string{contract.MetaKey(a.Sale), contract.RoomKey(a.Sale)}
	}
	return []string{contract.MetaKey(a.Sale)}
}

// Args are the ARGV of the call.
func (a PreheatArgs) Args() []any {
	mode, shards, limit := "init", "", ""
	if a.Reset {
		mode = "reset"
	}
	if a.Shards > 1 {
		shards = strconv.Itoa(a.Shards)
	}
	if a.Limit > 1 {
		limit = strconv.Itoa(a.Limit)
	}
	args := []any{a.Sale, a.Stock, a.Starts.UnixMilli(), a.Ends.UnixMilli(), mode, a.Retention.Milliseconds(), shards, a.Namespace, limit}
	for _, v := range a.Variants {
		args = append(args, v.ID, v.Stock)
	}
	return args
}

// RunPreheat runs preheat.lua with a. created is true when the meta hash was written (new, or
// reset); stock is the sale's (total) stock now in Redis.
func RunPreheat(ctx context.Context, rdb redis.Scripter, a PreheatArgs) (created bool, stock int64, err error) {
	out, err := Preheat.Run(ctx, rdb, a.Keys(), a.Args()...).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return out[0] == 1, out[1], nil
}
