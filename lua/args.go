package lua

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
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
	// ProofJTI is the jti of the DPoP proof of a device-bound purchase ("" for none), spent
	// in the call for ProofWindow (KEYS[9], ARGV[10]).
	ProofJTI    string
	ProofWindow time.Duration
	// ProofJKT is that proof's key thumbprint (ARGV[11], with KEYS[10] the room's bound
	// places): a room sale refuses a user whose place is bound to another key.
	ProofJKT string
}

// Keys are the call's KEYS: meta, buyers, tokens, outbox, held, room, room:live,
// draw:entries, and a device-bound purchase's proof key and the room's bound places. The script reads the last three only on a sale that has a room or is a draw;
// they share the sale's (or shard's) hash tag, so passing them costs nothing elsewhere.
func (c GateCall) Keys() []string { return c.AppendKeys(make([]string, 0, 8)) }

// AppendKeys appends the call's KEYS to dst (a combined call's slice: lua.GateThrottled).
func (c GateCall) AppendKeys(dst []string) []string {
	dst = append(dst, contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale), contract.TokensKey(c.Sale),
		contract.OutboxKey(c.Sale), contract.HeldKey(c.Sale), contract.RoomKey(c.Sale), contract.RoomLiveKey(c.Sale),
		contract.DrawEntriesKey(c.Sale))
	if c.ProofJTI != "" {
		dst = append(dst, contract.ProofKey(c.Sale, c.ProofJTI), contract.RoomKeysKey(c.Sale))
	}
	return dst
}

// Args are the call's ARGV.
func (c GateCall) Args() []any { return c.AppendArgs(make([]any, 0, 9)) }

// AppendArgs appends the call's ARGV to dst.
func (c GateCall) AppendArgs(dst []any) []any {
	q := ""
	if c.Quantity != 0 {
		q = strconv.Itoa(c.Quantity)
	}
	var admission any = ""
	if c.Admission {
		admission = boxedOne
	}
	dst = append(dst, c.Sale, c.User, c.OrderID, c.TokenValue, groups.box(c.Group), c.TraceParent, c.Variant, q, admission)
	if c.ProofJTI != "" {
		dst = append(dst, c.ProofWindow.Milliseconds(), c.ProofJKT)
	}
	return dst
}

// boxedOne is the argument "1" as an interface value, made once (boxing a string allocates).
var boxedOne any = "1"

// groups keeps the relay group's name boxed: every gateway passes the same one on every call.
var groups groupBox

// groupBox is the last group name seen and its interface value.
type groupBox struct{ p atomic.Pointer[boxedString] }

type boxedString struct {
	s   string
	box any
}

// box is s as an interface value, the one made before when s is the last name seen.
func (g *groupBox) box(s string) any {
	if b := g.p.Load(); b != nil && b.s == s {
		return b.box
	}
	b := &boxedString{s: s, box: s}
	g.p.Store(b)
	return b.box
}

// Run runs gate.lua (EVALSHA, EVAL on NOSCRIPT) and returns its raw reply.
func (c GateCall) Run(ctx context.Context, rdb redis.Scripter) ([]any, error) {
	return Gate.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
}

// GateCommonCall is one call of gate_common.lua, the decision of the common sale: gate.lua's
// purchase that names no variant, asks for one unit and carries no DPoP proof. Its KEYS are
// gate.lua's first four, its ARGV gate.lua's 1-4 and 6.
type GateCommonCall struct {
	Sale        string // sale id, or the shard id of the user's shard
	User        string
	OrderID     string
	TokenValue  string // "<nonce>:<exp_ms>" of the presented token; "" when none is required
	TraceParent string // W3C traceparent; "" when none
}

// Common is the gate_common.lua call of c's purchase; ok is false when the purchase is not one
// it decides (a variant, a quantity above 1, a proof): gate.lua's then.
func (c GateCall) Common() (cc GateCommonCall, ok bool) {
	if c.Variant != "" || c.Quantity > 1 || c.ProofJTI != "" {
		return GateCommonCall{}, false
	}
	return GateCommonCall{Sale: c.Sale, User: c.User, OrderID: c.OrderID, TokenValue: c.TokenValue, TraceParent: c.TraceParent}, true
}

// Keys are the call's KEYS: meta, buyers, tokens, outbox.
func (c GateCommonCall) Keys() []string { return c.AppendKeys(make([]string, 0, 4)) }

// AppendKeys appends the call's KEYS to dst.
func (c GateCommonCall) AppendKeys(dst []string) []string {
	return append(dst, contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale), contract.TokensKey(c.Sale), contract.OutboxKey(c.Sale))
}

// Args are the call's ARGV.
func (c GateCommonCall) Args() []any { return c.AppendArgs(make([]any, 0, 5)) }

// AppendArgs appends the call's ARGV to dst.
func (c GateCommonCall) AppendArgs(dst []any) []any {
	return append(dst, c.Sale, c.User, c.OrderID, c.TokenValue, c.TraceParent)
}

// Run runs gate_common.lua (EVALSHA, EVAL on NOSCRIPT) and returns its raw reply.
func (c GateCommonCall) Run(ctx context.Context, rdb redis.Scripter) ([]any, error) {
	return GateCommon.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
}

// Variant is one variant of a sale and its units.
type Variant struct {
	ID    string `json:"id"`
	Stock int64  `json:"stock"`
}

// PreheatCall is one call of preheat.lua: a sale's (or one shard's) window, stock, limit and
// variants, or a sharded sale's base hash (Shards > 1). Its fields are the script's ARGV in the
// order it reads them (see its header). The backend's preheat and every test that loads a sale
// go through it, so a new argument is added in one place.
type PreheatCall struct {
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
	// Draw: the sale is in draw mode, its draw hash set up already (draw_setup.lua runs first).
	// The script refuses to write the sale when the draw hash has no seed, and marks the meta
	// hash "draw" = 1. Never with Room (Room wins here; the script refuses a mix across calls).
	Draw bool
}

// Keys are the call's KEYS: the meta hash, the room hash when the sale has a room or the
// draw hash when it is a draw, then (not on a sharded sale's base hash) the outbox, buyers
// and held keys.
func (a PreheatCall) Keys() []string {
	keys := make([]string, 0, 5)
	keys = append(keys, contract.MetaKey(a.Sale))
	if a.Room {
		keys = append(keys, contract.RoomKey(a.Sale))
	} else if a.Draw {
		keys = append(keys, contract.DrawKey(a.Sale))
	}
	if a.Shards <= 1 {
		// The outbox and its group made once here, not by the gate script on every purchase;
		// the buyers' and held expiries moved with the sale's end.
		keys = append(keys, contract.OutboxKey(a.Sale), contract.BuyersKey(a.Sale), contract.HeldKey(a.Sale))
	}
	return keys
}

// Args are the ARGV of the call.
func (a PreheatCall) Args() []any {
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

// Run runs preheat.lua. created is true when the meta hash was written (new, or reset); stock
// is the sale's (total) stock now in Redis (0 for a sharded sale's base hash).
func (a PreheatCall) Run(ctx context.Context, rdb redis.Scripter) (created bool, stock int64, err error) {
	out, err := Preheat.Run(ctx, rdb, a.Keys(), a.Args()...).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return out[0] == 1, out[1], nil
}

// ReconcileCall is one call of reconcile.lua on a sale or one shard: a stock delta and the
// pairs that restore buyers, variant stocks and held units (see the script's header).
type ReconcileCall struct {
	Sale  string // sale id, or a shard id
	Delta int64  // added to the stock; may be 0 or negative
	// Pairs are ARGV[3..], flattened: "<user>", order id (restore a buyer); "v:<variant>",
	// delta; "h:<user>", units; "#<user>", purchase seq.
	Pairs []any
	// Held passes the held hash as KEYS[3]; the script refuses "h:" and "#" pairs without it.
	Held bool
}

// Keys are the call's KEYS: meta, buyers, and held when Held.
func (c ReconcileCall) Keys() []string {
	keys := []string{contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale)}
	if c.Held {
		keys = append(keys, contract.HeldKey(c.Sale))
	}
	return keys
}

// Args are the call's ARGV.
func (c ReconcileCall) Args() []any { return append([]any{c.Sale, c.Delta}, c.Pairs...) }

// Run runs reconcile.lua. stock is the Redis stock after the delta (-1 when the sale is not in
// Redis: nothing was changed); restored counts the buyers restored, raised the held pairs that
// changed the held hash.
func (c ReconcileCall) Run(ctx context.Context, rdb redis.Scripter) (stock, restored, raised int64, err error) {
	out, err := Reconcile.Run(ctx, rdb, c.Keys(), c.Args()...).Int64Slice()
	if err != nil {
		return 0, 0, 0, err
	}
	if len(out) != 3 {
		return 0, 0, 0, fmt.Errorf("reconcile.lua: unexpected reply %v", out)
	}
	return out[0], out[1], out[2], nil
}

// CompensateCall is one call of compensate.lua: give an accepted order's units back.
type CompensateCall struct {
	Sale     string // sale id, or the user's shard id (where the buyers entry is)
	OrderID  string
	User     string
	Variant  string // "" for none
	Quantity int    // units of the order; below 1 means 1
}

// Keys are the call's KEYS: meta, buyers, compensated, held (always passed: the script skips it
// when the hash does not exist), and the room hash and the waitlist's log (a unit of a sale
// whose waitlist runs is held for it).
func (c CompensateCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale), contract.CompensatedKey(c.Sale), contract.HeldKey(c.Sale),
		contract.RoomKey(c.Sale), contract.RoomOfferLogKey(c.Sale)}
}

// Args are the call's ARGV.
func (c CompensateCall) Args() []any {
	return []any{c.Sale, c.OrderID, c.User, c.Variant, max(c.Quantity, 1)}
}

// Run runs compensate.lua. done is true when this call returned the units (false: they were
// returned before); stock is the Redis stock after it, -1 when the sale is no longer in Redis.
func (c CompensateCall) Run(ctx context.Context, rdb redis.Scripter) (done bool, stock int64, err error) {
	return CompensateReply(Compensate.Run(ctx, rdb, c.Keys(), c.Args()...))
}

// EvalSha queues the call on a pipeline by its SHA only (one round trip for many orders):
// load the script first (Compensate.Load), or each call fails with NOSCRIPT. Read the reply
// with CompensateReply.
func (c CompensateCall) EvalSha(ctx context.Context, pipe redis.Scripter) *redis.Cmd {
	return Compensate.EvalSha(ctx, pipe, c.Keys(), c.Args()...)
}

// CompensateReply reads the reply of a compensate.lua call (see CompensateCall.Run).
func CompensateReply(cmd *redis.Cmd) (done bool, stock int64, err error) {
	out, err := cmd.Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if len(out) != 2 {
		return false, 0, fmt.Errorf("compensate.lua: unexpected reply %v", out)
	}
	return out[0] == 1, out[1], nil
}
