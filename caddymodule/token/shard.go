package token

import (
	"context"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// runIssue runs token_issue.lua on one sale's, or one shard's, keys.
func (h *Issuer) runIssue(ctx context.Context, target, user, nonce string) ([]any, error) {
	return lua.Script("token_issue").Run(ctx, h.scripter,
		[]string{contract.MetaKey(target), contract.TokensKey(target)},
		user, nonce, time.Duration(h.TTL).Milliseconds(), time.Duration(*h.LeadTime).Milliseconds(),
	).Slice()
}

// shardedReply reports whether the script answered "sharded" (the sale's stock is split over
// shards; contract/shard.go), and the shard count.
func shardedReply(reply []any) (int, bool) {
	if len(reply) != 3 {
		return 0, false
	}
	if s, _ := reply[0].(string); s != "sharded" {
		return 0, false
	}
	k, ok := reply[1].(int64)
	if !ok || k < 2 || k > contract.MaxShards {
		return 0, false
	}
	return int(k), true
}
