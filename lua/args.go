package lua

import (
	"context"
	"fmt"
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
	// ProofJTI is the jti of the DPoP proof of a device-bound purchase ("" for none), spent
	// in the call for ProofWindow (KEYS[9], ARGV[10]).
	ProofJTI    string
	ProofWindow time.Duration
}

// Keys are the call's KEYS: meta, buyers, tokens, outbox, held, room, room:live,
// draw:entries, and a device-bound purchase's proof key. The script reads the last three only on a sale that has a room or is a draw;
// they share the sale's (or shard's) hash tag, so passing them costs nothing elsewhere.
func (c GateCall) Keys() []string { return c.AppendKeys(make([]string, 0, 8)) }

// AppendKeys appends the call's KEYS to dst (a combined call's slice: lua.GateThrottled).
func (c GateCall) AppendKeys(dst []string) []string {
	dst = append(dst, contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale), contract.TokensKey(c.Sale),
		contract.OutboxKey(c.Sale), contract.HeldKey(c.Sale), contract.RoomKey(c.Sale), contract.RoomLiveKey(c.Sale),
		contract.DrawEntriesKey(c.Sale))
	if c.ProofJTI != "" {
		dst = append(dst, contract.ProofKey(c.Sale, c.ProofJTI))
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
	admission := ""
	if c.Admission {
		admission = "1"
	}
	dst = append(dst, c.Sale, c.User, c.OrderID, c.TokenValue, c.Group, c.TraceParent, c.Variant, q, admission)
	if c.ProofJTI != "" {
		dst = append(dst, c.ProofWindow.Milliseconds())
	}
	return dst
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
// when the hash does not exist).
func (c CompensateCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale), contract.CompensatedKey(c.Sale), contract.HeldKey(c.Sale)}
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

// ShardTakeCall is the first half of moving units between two shards (shard_take.lua): take
// up to Units from the donor From and journal the move there.
type ShardTakeCall struct {
	From  string // the donor shard id
	Move  string // the move id; contract.VariantMoveID names a variant's move
	Units int    // units wanted, > 0
	To    string // the receiver shard id
}

// Keys are the call's KEYS: the donor's meta and moves journal.
func (c ShardTakeCall) Keys() []string {
	return []string{contract.MetaKey(c.From), contract.MovesKey(c.From)}
}

// Args are the call's ARGV.
func (c ShardTakeCall) Args() []any { return []any{c.Move, c.Units, c.To} }

// Run runs shard_take.lua and returns the units taken (0: none, nothing journaled; a move id
// already journaled returns its recorded amount).
func (c ShardTakeCall) Run(ctx context.Context, rdb redis.Scripter) (taken int, err error) {
	return ShardTake.Run(ctx, rdb, c.Keys(), c.Args()...).Int()
}

// ShardGiveCall is the second half of a move (shard_give.lua): add a journaled move's units to
// the receiver To, once per move id.
type ShardGiveCall struct {
	To    string // the receiver shard id
	Move  string // the move id, as journaled by ShardTakeCall
	Units int    // the units taken, > 0
}

// Keys are the call's KEYS: the receiver's meta and moved_in set.
func (c ShardGiveCall) Keys() []string {
	return []string{contract.MetaKey(c.To), contract.MovedInKey(c.To)}
}

// Args are the call's ARGV.
func (c ShardGiveCall) Args() []any { return []any{c.To, c.Move, c.Units} }

// Run runs shard_give.lua. applied is false when the move was applied before (nothing
// changed); stock is the receiver's stock after the call, -1 when it is no longer in Redis.
func (c ShardGiveCall) Run(ctx context.Context, rdb redis.Scripter) (applied bool, stock int64, err error) {
	out, err := ShardGive.Run(ctx, rdb, c.Keys(), c.Args()...).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if len(out) != 2 {
		return false, 0, fmt.Errorf("shard_give.lua: unexpected reply %v", out)
	}
	return out[0] == 1, out[1], nil
}

// OutboxAckCall is the relay's acknowledgement of outbox entries the broker confirmed
// (outbox_ack.lua): XACK and XDEL them, and let a drained outbox expire with its sale.
type OutboxAckCall struct {
	Sale  string // sale id, or a shard id
	Group string // the relay's consumer group
	// Retention is the drained outbox's expiry when the meta hash has none (or is gone).
	Retention time.Duration
	IDs       []string // the confirmed stream entry ids; at least one
}

// Keys are the call's KEYS: outbox, meta.
func (c OutboxAckCall) Keys() []string {
	return []string{contract.OutboxKey(c.Sale), contract.MetaKey(c.Sale)}
}

// Args are the call's ARGV.
func (c OutboxAckCall) Args() []any {
	args := make([]any, 0, len(c.IDs)+2)
	args = append(args, c.Group, c.Retention.Milliseconds())
	for _, id := range c.IDs {
		args = append(args, id)
	}
	return args
}

// Run runs outbox_ack.lua and returns how many entries this call acknowledged (ids another
// relay acknowledged count 0; they are deleted all the same).
func (c OutboxAckCall) Run(ctx context.Context, rdb redis.Scripter) (acked int64, err error) {
	return OutboxAck.Run(ctx, rdb, c.Keys(), c.Args()...).Int64()
}

// DrawEnterCall is one call of draw_enter.lua: an entry into a draw, a change of its variant,
// or its withdrawal (docs/draw.md).
type DrawEnterCall struct {
	Sale     string
	User     string
	Withdraw bool   // withdraw the entry; otherwise enter (or change the variant)
	Variant  string // "" for the sale's only variant (or a sale without variants)
	// The proof of work presented with an entry: its nonce ("" for none), the challenge's
	// expiry and the difficulty it was sealed with.
	Nonce      string
	NonceExp   time.Time
	Difficulty int
}

// DrawSpentKey is the sorted set of a draw's spent proof-of-work nonces (nonce -> expiry ms),
// beside the draw hash under the sale's hash tag.
func DrawSpentKey(sale string) string { return contract.DrawKey(sale) + ":spent" }

// Keys are the call's KEYS: meta, draw, draw:entries, draw:spent.
func (c DrawEnterCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.DrawKey(c.Sale), contract.DrawEntriesKey(c.Sale), DrawSpentKey(c.Sale)}
}

// Args are the call's ARGV.
func (c DrawEnterCall) Args() []any {
	op, exp, d := "enter", int64(0), ""
	if c.Withdraw {
		op = "withdraw"
	}
	if c.Nonce != "" {
		exp, d = c.NonceExp.UnixMilli(), strconv.Itoa(c.Difficulty)
	}
	return []any{op, c.User, c.Variant, c.Nonce, exp, d}
}

// DrawReply is the decoded reply of draw_enter.lua or draw_status.lua: Code 0 with the entry,
// else the refusal's number (see the scripts' headers).
type DrawReply struct {
	Code    int64
	EntryID string
	Variant string
	State   string
	// draw_status.lua only: the entry's 0-based position once drawn (-1 before), and the wave
	// and claim deadline (unix ms) of its variant's current wave when the entry is in it.
	Pos, Wave, ClaimUntilMS int64
}

// Run runs draw_enter.lua.
func (c DrawEnterCall) Run(ctx context.Context, rdb redis.Scripter) (DrawReply, error) {
	res, err := DrawEnter.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
	if err != nil {
		return DrawReply{}, err
	}
	r := DrawReply{Code: res[0].(int64)}
	if r.Code == 0 && len(res) == 4 {
		r.EntryID, r.Variant, r.State = fmt.Sprint(res[1]), fmt.Sprint(res[2]), fmt.Sprint(res[3])
	}
	return r, nil
}

// DrawStatusCall is one call of draw_status.lua: a user's entry in a draw and its state.
type DrawStatusCall struct {
	Sale string
	User string
}

// Keys are the call's KEYS: meta, draw, draw:entries, buyers.
func (c DrawStatusCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.DrawKey(c.Sale), contract.DrawEntriesKey(c.Sale), contract.BuyersKey(c.Sale)}
}

// Run runs draw_status.lua (read only).
func (c DrawStatusCall) Run(ctx context.Context, rdb redis.Scripter) (DrawReply, error) {
	res, err := DrawStatus.Run(ctx, rdb, c.Keys(), c.User).Slice()
	if err != nil {
		return DrawReply{}, err
	}
	r := DrawReply{Code: res[0].(int64)}
	if r.Code == 0 && len(res) == 7 {
		r.EntryID, r.State, r.Variant = fmt.Sprint(res[1]), fmt.Sprint(res[2]), fmt.Sprint(res[3])
		r.Pos, _ = res[4].(int64)
		r.Wave, _ = res[5].(int64)
		r.ClaimUntilMS, _ = res[6].(int64)
	}
	return r, nil
}

// DrawSetupCall is one call of draw_setup.lua: a draw sale's draw hash at preheat.
type DrawSetupCall struct {
	Sale string
	// Seed is 64 hex digits (32 random bytes); Commitment its hex SHA-256.
	Seed, Commitment string
	// Opens and Closes are the entry window; Claim the winners' claim window.
	Opens, Closes time.Time
	Claim         time.Duration
	// DMin and DMax are the entry's proof-of-work bits.
	DMin, DMax int
	// Until is when the draw hash expires (the sale's end plus retention).
	Until time.Time
}

// Keys are the call's KEYS: the draw hash.
func (c DrawSetupCall) Keys() []string { return []string{contract.DrawKey(c.Sale)} }

// Args are the call's ARGV.
func (c DrawSetupCall) Args() []any {
	return []any{c.Seed, c.Commitment, c.Opens.UnixMilli(), c.Closes.UnixMilli(), c.Claim.Milliseconds(), c.DMin, c.DMax, c.Until.UnixMilli()}
}

// Run runs draw_setup.lua: created is true when this call drew the seed; commitment is the
// stored one (the first seed's).
func (c DrawSetupCall) Run(ctx context.Context, rdb redis.Scripter) (created bool, commitment string, err error) {
	out, err := DrawSetup.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
	if err != nil {
		return false, "", err
	}
	if len(out) != 2 {
		return false, "", fmt.Errorf("draw_setup.lua: unexpected reply %v", out)
	}
	n, _ := out[0].(int64)
	commitment, _ = out[1].(string)
	return n == 1, commitment, nil
}

// DrawCloseCall is one call of draw_close.lua: close a draw's entries (idempotent).
type DrawCloseCall struct{ Sale string }

// Keys are the call's KEYS: the draw hash.
func (c DrawCloseCall) Keys() []string { return []string{contract.DrawKey(c.Sale)} }

// Run runs draw_close.lua: the draw's state after the call (closed or drawn) and the close's
// time.
func (c DrawCloseCall) Run(ctx context.Context, rdb redis.Scripter) (state string, closed time.Time, err error) {
	out, err := DrawClose.Run(ctx, rdb, c.Keys()).Slice()
	if err != nil {
		return "", time.Time{}, err
	}
	if len(out) != 2 {
		return "", time.Time{}, fmt.Errorf("draw_close.lua: unexpected reply %v", out)
	}
	state, _ = out[0].(string)
	ms, _ := out[1].(int64)
	return state, time.UnixMilli(ms), nil
}

// DrawWaveCall is one call of draw_wave.lua for one variant of a drawn sale.
type DrawWaveCall struct {
	Sale    string
	Variant string // "" for a sale without variants
}

// Keys are the call's KEYS: meta, draw.
func (c DrawWaveCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.DrawKey(c.Sale)}
}

// What draw_wave.lua did (DrawWaveResult.Action).
const (
	DrawWaveRunning = 0 // the current wave still runs
	DrawWaveOpened  = 1 // a wave was opened
	DrawWaveDone    = 2 // the variant is done now
	DrawWaveWasDone = 3 // the variant was done already
)

// DrawWaveResult is draw_wave.lua's answer: what it did, the variant's current (or last) wave, and
// the wave whose claim window it found over (EndedWave 0: none).
type DrawWaveResult struct {
	Action           int
	Wave, Lo, Hi     int
	ClaimUntil       time.Time // zero when no wave was ever opened
	EndedWave        int
	EndedLo, EndedHi int
}

// Run runs draw_wave.lua.
func (c DrawWaveCall) Run(ctx context.Context, rdb redis.Scripter) (DrawWaveResult, error) {
	out, err := DrawWave.Run(ctx, rdb, c.Keys(), c.Variant).Int64Slice()
	if err != nil {
		return DrawWaveResult{}, err
	}
	if len(out) != 8 {
		return DrawWaveResult{}, fmt.Errorf("draw_wave.lua: unexpected reply %v", out)
	}
	w := DrawWaveResult{Action: int(out[0]), Wave: int(out[1]), Lo: int(out[2]), Hi: int(out[3]),
		EndedWave: int(out[5]), EndedLo: int(out[6]), EndedHi: int(out[7])}
	if out[4] > 0 {
		w.ClaimUntil = time.UnixMilli(out[4])
	}
	return w, nil
}
