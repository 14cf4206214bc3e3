package core

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// Store is all the issuer asks of Redis: the token_issue script on one sale's or shard's
// keys, with a typed reply. With admission, a sale that has a waiting room answers
// NotAdmitted to a user without a live admission, in the same round trip; a user whose room
// place is bound to another key than is.JKT is refused KeyMismatch.
type Store interface {
	// Issue runs lua/token_issue.lua for is on is.Target's keys: one round trip. With
	// is.Zones the same call runs the zones first (lua.TokenIssueThrottled) and Reply.Zones is
	// their part of the reply; when they refused, the outcome is Throttled and nothing was
	// issued.
	Issue(ctx context.Context, is Issuance) (Reply, error)
}

// RedisStore is the Store of a Redis client.
type RedisStore struct {
	R redis.Scripter
	// Sub, when set, sends the scripts through go-redis's deferred autopipeliner and waits
	// for them with edge.Wait: the store of a Decider whose Caller is Inline (no goroutine
	// per call; the deadline applies where the answer is awaited).
	Sub edge.Submitter
}

// run runs s on keys and args, through Sub when set.
func (s RedisStore) run(ctx context.Context, sc *redis.Script, keys []string, args []any) ([]any, error) {
	if s.Sub != nil {
		return edge.Script(ctx, s.Sub, sc, keys, args...).Slice()
	}
	return sc.Run(ctx, s.R, keys, args...).Slice()
}

var errReply = errors.New("token: unexpected script reply")

// issueKeys are token_issue.lua's KEYS on target (a sale id or a shard id).
func issueKeys(target string) []string {
	keys := []string{contract.MetaKey(target), contract.TokensKey(target), contract.BuyersKey(target)}
	if _, _, ok := contract.SplitShardID(target); !ok {
		// The room's keys share the sale's hash tag; a shard's slot differs, and rooms are
		// for unsharded sales, so a shard skips them (and the draw's entries: draws are never
		// sharded).
		keys = append(keys, contract.RoomKey(target), contract.RoomLiveKey(target), contract.RoomLogKey(target),
			contract.DrawEntriesKey(target), contract.RoomKeysKey(target))
	}
	return keys
}

// targetKeys are issueKeys of each target, boxed once (eight key names and eight boxes an
// issue less). Bounded: past maxTargetKeys targets it starts again.
var targetKeys = edge.KeyBox{Build: issueKeys, Max: maxTargetKeys}

const maxTargetKeys = 4096

// Issue runs lua/token_issue.lua on is.Target, with is.Zones first in the same call
// (lua.TokenIssueThrottled) when set.
func (s RedisStore) Issue(ctx context.Context, is Issuance) (Reply, error) {
	target, joint := is.Target, is.Zones
	args := []any{is.User, is.Nonce, is.TTL.Milliseconds(), is.Lead.Milliseconds(), ""}
	if _, _, ok := contract.SplitShardID(target); ok {
		args[4] = "shard" // an empty shard still issues: its refusal at the gate makes units move
	} else {
		// The room's keys share the sale's hash tag; a shard's slot differs, and rooms are
		// for unsharded sales (the backend refuses a room with shards), so a shard skips it.
		// They are passed without admission too: the script then refuses a sale that has a
		// room (misconfigured) instead of giving its tokens to anyone.
		// The draw's entries likewise: draws are never sharded, and a draw sale reached
		// without them is refused (draw_missing), never given tokens.
		flag := ""
		if is.Admission {
			flag = "1"
		}
		// The proof key's thumbprint, against the room place's (KEYS[8]).
		args = append(args, flag, is.JKT)
	}
	if s.Sub != nil {
		return s.issueInline(ctx, target, args, joint)
	}
	keys := issueKeys(target)
	if joint == nil {
		reply, err := s.run(ctx, lua.TokenIssue, keys, args)
		if err != nil {
			return Reply{}, err
		}
		return parseReply(reply)
	}
	keys = joint.AppendKeys(keys)
	args = joint.AppendArgs(args)
	res, err := s.run(ctx, lua.TokenIssueThrottled, keys, args)
	return jointReply(res, err)
}

// issueInline is Issue through Sub, with target's KEYS boxed once per target.
func (s RedisStore) issueInline(ctx context.Context, target string, args []any, joint edge.Joint) (Reply, error) {
	keys := targetKeys.Of(target)
	if joint == nil {
		a := append(edge.ScriptArgs(len(keys)+len(args)), keys...)
		reply, err := edge.ScriptCall(ctx, s.Sub, lua.TokenIssue, len(keys), append(a, args...)).Slice()
		if err != nil {
			return Reply{}, err
		}
		return parseReply(reply)
	}
	var room [16]string
	zk := joint.AppendKeys(room[:0])
	a := append(edge.ScriptArgs(len(keys)+len(zk)+len(args)+24), keys...)
	for _, k := range zk {
		a = append(a, k)
	}
	a = joint.AppendArgs(append(a, args...))
	return jointReply(edge.ScriptCall(ctx, s.Sub, lua.TokenIssueThrottled, len(keys)+len(zk), a).Slice())
}

// jointReply reads lua.TokenIssueThrottled's reply.
func jointReply(res []any, err error) (Reply, error) {
	if err != nil {
		return Reply{}, err
	}
	if len(res) == 0 || len(res) > 2 {
		return Reply{}, errReply
	}
	zones, ok := res[0].([]any)
	if !ok {
		return Reply{}, errReply
	}
	if len(res) == 1 {
		return Reply{Outcome: Throttled, Zones: zones}, nil
	}
	issue, ok := res[1].([]any)
	if !ok {
		return Reply{Zones: zones}, errReply
	}
	rep, err := parseReply(issue)
	rep.Zones = zones
	return rep, err
}
