package token

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// Store is all the issuer asks of Redis: the token_issue script on one sale's or shard's
// keys, with a typed reply.
type Store interface {
	Issue(ctx context.Context, target, user, nonce string, ttl, lead time.Duration) (Reply, error)
}

// RedisStore is the Store of a Redis client.
type RedisStore struct{ R redis.Scripter }

// Issue runs lua/token_issue.lua on target (a sale id or a shard id).
func (s RedisStore) Issue(ctx context.Context, target, user, nonce string, ttl, lead time.Duration) (Reply, error) {
	shard := ""
	if _, _, ok := contract.SplitShardID(target); ok {
		shard = "shard" // an empty shard still issues: its refusal at the gate makes units move
	}
	reply, err := lua.TokenIssue.Run(ctx, s.R,
		[]string{contract.MetaKey(target), contract.TokensKey(target), contract.BuyersKey(target)},
		user, nonce, ttl.Milliseconds(), lead.Milliseconds(), shard,
	).Slice()
	if err != nil {
		return Reply{}, err
	}
	return parseReply(reply)
}
