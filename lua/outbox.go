package lua

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
)

// OutboxAckCall is the relay's acknowledgement of outbox entries the broker confirmed
// (outbox_ack.lua): XACK and XDEL them, and let a drained outbox expire with its sale (and a
// buyers hash found without an expiry).
type OutboxAckCall struct {
	Sale  string // sale id, or a shard id
	Group string // the relay's consumer group
	// Retention is the drained outbox's expiry when the meta hash has none (or is gone).
	Retention time.Duration
	IDs       []string // the confirmed stream entry ids; at least one
}

// Keys are the call's KEYS: outbox, meta, buyers.
func (c OutboxAckCall) Keys() []string {
	return []string{contract.OutboxKey(c.Sale), contract.MetaKey(c.Sale), contract.BuyersKey(c.Sale)}
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
