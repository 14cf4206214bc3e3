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
	// Decide runs lua/gate.lua for p on p.Target's keys: one round trip. With p.Zones the same
	// call runs the zones first (lua.GateThrottled, on a single Redis) and zones is their part
	// of the reply; when they refused, the verdict is Throttled and the gate did not run.
	Decide(ctx context.Context, p Purchase) (v Verdict, zones []any, err error)
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

// Decide runs lua/gate.lua for p, or lua.GateThrottled with p.Zones; a common purchase on a
// sale not known to be general (p.General unset) runs gate_common.lua (lua.GateCommonThrottled)
// instead, whose General answer asks for gate.lua.
func (s RedisStore) Decide(ctx context.Context, p Purchase) (Verdict, []any, error) {
	c := gateCall(ctx, p)
	cc, common := c.Common()
	common = common && !p.General
	script, throttled, nk := lua.Gate, lua.GateThrottled, len(saleKeys.Of(p.Target))
	if common {
		script, throttled, nk = lua.GateCommon, lua.GateCommonThrottled, commonKeys
	}
	if p.Zones == nil {
		if s.Sub == nil {
			var res []any
			var err error
			if common {
				res, err = cc.Run(ctx, s.R)
			} else {
				res, err = c.Run(ctx, s.R)
			}
			if err != nil {
				return Verdict{}, nil, err
			}
			v, err := parseReply(res)
			return v, nil, err
		}
		keys := saleKeys.Of(p.Target)[:nk]
		a := append(edge.ScriptArgs(len(keys)+2+gateArgs+2), keys...)
		a, nk := proofKeys(a, len(keys), p)
		if common {
			a = cc.AppendArgs(a)
		} else {
			a = c.AppendArgs(a)
		}
		res, err := edge.ScriptCall(ctx, s.Sub, script, nk, a).Slice()
		if err != nil {
			return Verdict{}, nil, err
		}
		v, err := parseReply(res)
		return v, nil, err
	}
	var res []any
	var err error
	if s.Sub != nil {
		// KEYS: the sale's (boxed once per sale), then the zones'; ARGV likewise.
		keys := saleKeys.Of(p.Target)[:nk]
		var room [16]string
		zk := p.Zones.AppendKeys(room[:0])
		a := append(edge.ScriptArgs(len(keys)+2+len(zk)+gateArgs+2+24), keys...)
		a, nk := proofKeys(a, len(keys)+len(zk), p)
		for _, k := range zk {
			a = append(a, k)
		}
		if common {
			a = cc.AppendArgs(a)
		} else {
			a = c.AppendArgs(a)
		}
		a = p.Zones.AppendArgs(a)
		res, err = edge.ScriptCall(ctx, s.Sub, throttled, nk, a).Slice()
	} else {
		var keys []string
		var args []any
		if common {
			keys = p.Zones.AppendKeys(cc.AppendKeys(make([]string, 0, 16)))
			args = p.Zones.AppendArgs(cc.AppendArgs(make([]any, 0, 32)))
		} else {
			keys = p.Zones.AppendKeys(c.AppendKeys(make([]string, 0, 16)))
			args = p.Zones.AppendArgs(c.AppendArgs(make([]any, 0, 32)))
		}
		res, err = throttled.Run(ctx, s.R, keys, args...).Slice()
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

// commonKeys is how many KEYS gate_common.lua takes: gate.lua's first (lua.GateCommonCall).
const commonKeys = 4

// proofKeys appends a device-bound purchase's proof key (KEYS[9], its own, never boxed) and the
// room's bound places (KEYS[10], which come with it) to the boxed keys a; nk counts the KEYS.
func proofKeys(a []any, nk int, p Purchase) ([]any, int) {
	if jti := p.ProofJTI(); jti != "" {
		return append(a, contract.ProofKey(p.Target, jti), contract.RoomKeysKey(p.Target)), nk + 2
	}
	return a, nk
}

// gateArgs is how many ARGV gate.lua takes (lua.GateCall.AppendArgs).
const gateArgs = 9

// saleKeys are gate.lua's KEYS of each sale or shard, boxed once: a purchase on a sale seen
// before builds none (eight key names and eight boxes a purchase less). Bounded: past
// maxSaleKeys sales it starts again.
var saleKeys = edge.KeyBox{Build: func(sale string) []string { return lua.GateCall{Sale: sale}.Keys() }, Max: maxSaleKeys}

const maxSaleKeys = 4096

func gateCall(ctx context.Context, p Purchase) lua.GateCall {
	return lua.GateCall{Sale: p.Target, User: p.User, OrderID: p.OrderID, TokenValue: p.TokenValue, Group: RelayGroup,
		TraceParent: TraceParent(ctx), Variant: p.Variant, Quantity: p.Quantity, Admission: p.Admission,
		ProofJTI: p.ProofJTI(), ProofWindow: p.ProofWindow, ProofJKT: p.Proof.JKT}
}

// Decide runs gate.lua for p (its Zones aside, and whether it is common): one round trip.
func Decide(ctx context.Context, rdb redis.Scripter, p Purchase) (Verdict, error) {
	res, err := gateCall(ctx, p).Run(ctx, rdb)
	if err != nil {
		return Verdict{}, err
	}
	return parseReply(res)
}
