package lua

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

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
