package core

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// Store is all the gate asks of Redis: the decision script on one sale's (or shard's) keys,
// and after sell-out whether the user is a buyer. The decision core depends on nothing else,
// so its rules are tested with a fake.
type Store interface {
	// Decide runs lua/gate.lua for p: one round trip.
	Decide(ctx context.Context, p Purchase) (Verdict, error)
	// Buyer returns the user's order id in the sale or shard target, "" when none.
	Buyer(ctx context.Context, target, user string) (string, error)
}

// RedisStore is the Store of a Redis client, pooled or pipelined.
type RedisStore struct {
	R redis.Cmdable
	// Sub, when set, sends every command through go-redis's deferred autopipeliner and waits
	// for it with edge.Wait: the store of a Decider whose Caller is Inline (no goroutine per
	// call; the deadline applies where the answer is awaited).
	Sub edge.Submitter
}

// Decide runs the decision script for p.
func (s RedisStore) Decide(ctx context.Context, p Purchase) (Verdict, error) {
	if s.Sub != nil {
		keys := saleKeys.Of(p.Sale)
		a := append(edge.ScriptArgs(len(keys)+2+gateArgs+2), keys...)
		nk := len(keys)
		if p.ProofJTI != "" {
			// A device-bound purchase's proof key (KEYS[9]) is its own, never boxed; the room's
			// bound places (KEYS[10]) come with it.
			a, nk = append(a, contract.ProofKey(p.Sale, p.ProofJTI), contract.RoomKeysKey(p.Sale)), nk+2
		}
		a = gateCall(ctx, p).AppendArgs(a)
		res, err := edge.ScriptCall(ctx, s.Sub, lua.Gate, nk, a).Slice()
		if err != nil {
			return Verdict{}, err
		}
		return parseReply(res)
	}
	return Decide(ctx, s.R, p)
}

// Buyer reads the user's order id from the buyers hash.
func (s RedisStore) Buyer(ctx context.Context, target, user string) (string, error) {
	if s.Sub != nil {
		cmd := redis.NewStringCmd(ctx, "hget", contract.BuyersKey(target), user)
		if err := edge.Wait(ctx, s.Sub.Submit(ctx, cmd)); err != nil {
			if errors.Is(err, redis.Nil) {
				return "", nil
			}
			return "", err
		}
		return cmd.Val(), nil
	}
	id, err := s.R.HGet(ctx, contract.BuyersKey(target), user).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return id, err
}

// JointStore is a Store that can carry a joint (the throttle's zones) in the decision's call:
// lua.GateThrottled, on a single Redis.
type JointStore interface {
	// DecideJoint runs the joint's zones, then the decision unless they refused (the verdict
	// is then Throttled), in one round trip; zones is the joint's part of the reply.
	DecideJoint(ctx context.Context, p Purchase, joint Joint) (v Verdict, zones []any, err error)
}

// DecideJoint runs lua.GateThrottled for p and joint.
func (s RedisStore) DecideJoint(ctx context.Context, p Purchase, joint Joint) (Verdict, []any, error) {
	c := gateCall(ctx, p)
	var res []any
	var err error
	if s.Sub != nil {
		// KEYS: the sale's (boxed once per sale), then the zones'; ARGV likewise.
		keys := saleKeys.Of(p.Sale)
		var room [16]string
		zk := joint.AppendKeys(room[:0])
		a := append(edge.ScriptArgs(len(keys)+2+len(zk)+gateArgs+2+24), keys...)
		nk := len(keys) + len(zk)
		if p.ProofJTI != "" {
			// A device-bound purchase's proof key (KEYS[9]) is its own, never boxed; the room's
			// bound places (KEYS[10]) come with it.
			a, nk = append(a, contract.ProofKey(p.Sale, p.ProofJTI), contract.RoomKeysKey(p.Sale)), nk+2
		}
		for _, k := range zk {
			a = append(a, k)
		}
		a = joint.AppendArgs(c.AppendArgs(a))
		res, err = edge.ScriptCall(ctx, s.Sub, lua.GateThrottled, nk, a).Slice()
	} else {
		keys := joint.AppendKeys(c.AppendKeys(make([]string, 0, 16)))
		args := joint.AppendArgs(c.AppendArgs(make([]any, 0, 32)))
		res, err = lua.GateThrottled.Run(ctx, s.R, keys, args...).Slice()
	}
	if err != nil {
		return Verdict{}, nil, err
	}
	if len(res) == 0 || len(res) > 2 {
		return Verdict{}, nil, errReply
	}
	zones, ok := res[0].([]any)
	if !ok {
		return Verdict{}, nil, errReply
	}
	if len(res) == 1 {
		return Verdict{Outcome: Throttled}, zones, nil
	}
	gate, ok := res[1].([]any)
	if !ok {
		return Verdict{}, zones, errReply
	}
	v, err := parseReply(gate)
	return v, zones, err
}

// gateArgs is how many ARGV gate.lua takes (lua.GateCall.AppendArgs).
const gateArgs = 9

// saleKeys are gate.lua's KEYS of each sale or shard, boxed once: a purchase on a sale seen
// before builds none (eight key names and eight boxes a purchase less). Bounded: past
// maxSaleKeys sales it starts again.
var saleKeys = edge.KeyBox{Build: func(sale string) []string { return lua.GateCall{Sale: sale}.Keys() }, Max: maxSaleKeys}

const maxSaleKeys = 4096

func gateCall(ctx context.Context, p Purchase) lua.GateCall {
	return lua.GateCall{Sale: p.Sale, User: p.User, OrderID: p.OrderID, TokenValue: p.TokenValue, Group: RelayGroup,
		TraceParent: TraceParent(ctx), Variant: p.Variant, Quantity: p.Quantity, Admission: p.Admission,
		ProofJTI: p.ProofJTI, ProofWindow: p.ProofWindow, ProofJKT: p.ProofJKT}
}

// Decide runs the decision script for p: one round trip.
func Decide(ctx context.Context, rdb redis.Scripter, p Purchase) (Verdict, error) {
	res, err := gateCall(ctx, p).Run(ctx, rdb)
	if err != nil {
		return Verdict{}, err
	}
	return parseReply(res)
}
