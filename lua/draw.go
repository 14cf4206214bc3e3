package lua

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

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
	// Flag (enter): the entrant is flagged (docs/draw.md, "Flagged entrants"): entered like
	// anyone, left out of the entries the close fixes.
	Flag bool
}

// DrawSpentKey is the sorted set of a draw's spent proof-of-work nonces (nonce -> expiry ms),
// beside the draw hash under the sale's hash tag.
func DrawSpentKey(sale string) string { return contract.DrawKey(sale) + ":spent" }

// Keys are the call's KEYS: meta, draw, draw:entries, draw:spent, draw:flagged.
func (c DrawEnterCall) Keys() []string {
	return []string{contract.MetaKey(c.Sale), contract.DrawKey(c.Sale), contract.DrawEntriesKey(c.Sale), DrawSpentKey(c.Sale),
		contract.DrawFlaggedKey(c.Sale)}
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
	flag := ""
	if c.Flag {
		flag = "1"
	}
	return []any{op, c.User, c.Variant, c.Nonce, exp, d, flag}
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
	// Published is the commitment published by an earlier preheat (Postgres's; "" before the
	// first): the draw hash must hold its seed, or the call writes nothing (ErrSeedLost).
	Published string
	// Waitlist: a winner's released unit goes to the next rank at once (compensate.lua).
	Waitlist bool
}

// ErrSeedLost: the draw hash does not hold the seed of the draw's published commitment (the
// seed or the hash is gone, or another seed was written there). A new seed would not open the
// commitment entrants saw, so none is drawn.
var ErrSeedLost = errors.New("the seed of the published commitment is not in Redis")

// Keys are the call's KEYS: the draw hash.
func (c DrawSetupCall) Keys() []string { return []string{contract.DrawKey(c.Sale)} }

// Args are the call's ARGV.
func (c DrawSetupCall) Args() []any {
	return []any{c.Seed, c.Commitment, c.Opens.UnixMilli(), c.Closes.UnixMilli(), c.Claim.Milliseconds(), c.DMin, c.DMax, c.Until.UnixMilli(), c.Published, flag(c.Waitlist)}
}

// Run runs draw_setup.lua: created is true when this call drew the seed; commitment is the
// stored one (the first seed's).
func (c DrawSetupCall) Run(ctx context.Context, rdb redis.Scripter) (created bool, commitment string, err error) {
	out, err := DrawSetup.Run(ctx, rdb, c.Keys(), c.Args()...).Slice()
	if err != nil && strings.Contains(err.Error(), "seed lost") {
		return false, "", fmt.Errorf("%w: %v", ErrSeedLost, err)
	}
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
	DrawWaveIdle    = 4 // a waitlist draw's wave is over with nothing unsold: waiting for a release
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

// flag is a script's boolean argument: "1" or "0".
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
