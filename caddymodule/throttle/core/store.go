package core

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/lua"
)

// Call is one zone's part of the exact tier's round trip: lua/throttle.lua on the zone's
// counter for the request's key.
type Call struct {
	Key  string // contract.ThrottleKey(zone, client key)
	Args []any  // limit, window_us, strikes, strike memory ms, ban_us
}

// Reply is the script's answer to one Call.
type Reply struct {
	Status    int // 0 admitted, 1 limited, 2 banned
	Remaining int
	Reset     time.Duration
	Retry     time.Duration
	Member    string // what identifies an admission for its refund (see lua/throttle.lua)
}

// Refund is an admission to take back: another zone of the same request refused it.
type Refund struct{ Key, Member string }

// Store is all the limiter asks of Redis: one round trip carrying one script call per zone,
// and the refunds of admissions another zone overruled. The limiter's rules test with a fake.
type Store interface {
	Eval(ctx context.Context, calls []Call) ([]Reply, error)
	Undo(ctx context.Context, refunds []Refund) error
}

// RedisStore is the Store of a Redis client. On a single Redis the zones of a request go into
// one script call; on a Cluster each zone's key lives on its own slot, so the calls are
// pipelined rather than merged.
type RedisStore struct {
	R redis.UniversalClient

	// AutoPipeline sends the scripts through go-redis's shared asynchronous autopipeliner,
	// which coalesces the calls of concurrent requests into deep pipelines: at hundreds of
	// concurrent connections that divides the syscalls on both sides by the batch depth.
	// Off: one ordinary pipeline per request. Set it before the first Eval.
	AutoPipeline bool

	apOnce sync.Once
	ap     *redis.AutoPipeliner
}

// Eval runs the calls in one pipeline. A call answered NOSCRIPT is sent again with the script
// body, alone: on a Redis Cluster each master caches scripts on its own, so the other calls
// of the pipeline did run, and sending them again would count the request twice.
func (s *RedisStore) Eval(ctx context.Context, calls []Call) ([]Reply, error) {
	r, missing, err := s.pipeline(ctx, calls, false)
	if err != nil || len(missing) == 0 {
		return r, err
	}
	sub := make([]Call, len(missing))
	for k, n := range missing {
		sub[k] = calls[n]
	}
	r2, _, err := s.pipeline(ctx, sub, true)
	if err != nil {
		return nil, err
	}
	for k, n := range missing {
		r[n] = r2[k]
	}
	return r, nil
}

// Inline reports whether the store's calls wait with edge.Wait (the deferred autopipeliner):
// the limiter then makes them on the request's goroutine (edge.Caller.Inline).
func (s *RedisStore) Inline() bool { return s.autopipeliner() != nil }

func (s *RedisStore) autopipeliner() *redis.AutoPipeliner {
	if !s.AutoPipeline {
		return nil
	}
	s.apOnce.Do(func() {
		if ap, err := s.R.AsyncAutoPipeline(); err == nil {
			s.ap = ap
		}
	})
	return s.ap
}

var errReply = errors.New("throttle: unexpected script reply")

// units groups the calls into script calls: on a single Redis (or a failover pair) every
// zone of the request goes into ONE script call, which saves Redis the per-call cost of each
// further EVALSHA; on a Cluster each zone's key lives on its own slot, so one call per zone.
func (s *RedisStore) units(calls []Call) [][]int {
	if _, single := s.R.(*redis.Client); single && len(calls) > 1 {
		all := make([]int, len(calls))
		for n := range calls {
			all[n] = n
		}
		return [][]int{all}
	}
	out := make([][]int, len(calls))
	for n := range calls {
		out[n] = []int{n}
	}
	return out
}

// The command names, the script's digest (SHA-1 of its text, computed in Go by
// redis.NewScript) and its text, boxed once: go-redis's EvalSha boxes them into the command's
// arguments on every call.
var (
	evalShaName any = "evalsha"
	evalName    any = "eval"
	throttleSHA any = lua.Throttle.Hash()
	throttleSrc any = lua.Source("throttle")
)

// scriptCall is the command of one script call over the calls at idx: EVALSHA sha (EVAL
// source with load) numkeys key key:ban ... args ..., in one slice.
func scriptCall(ctx context.Context, calls []Call, idx []int, load bool) *redis.Cmd {
	nargs := len(calls[idx[0]].Args)
	a := make([]any, 3, 3+len(idx)*(2+nargs))
	a[0], a[1], a[2] = evalShaName, throttleSHA, 2*len(idx)
	if load {
		a[0], a[1] = evalName, throttleSrc
	}
	for _, n := range idx {
		a = append(a, calls[n].Key, calls[n].Key+":ban")
	}
	for _, n := range idx {
		a = append(a, calls[n].Args...)
	}
	return redis.NewCmd(ctx, a...)
}

// doer is what the pipeline and the autopipeliner both offer: send a built command.
type doer interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// pipeline sends the calls' scripts in one pipeline. Without load (EVALSHA), the positions of
// the calls answered NOSCRIPT come back in missing, their replies left empty.
func (s *RedisStore) pipeline(ctx context.Context, calls []Call, load bool) (out []Reply, missing []int, err error) {
	// One unit of every call (a single Redis): no unit lists to build.
	var all [inlineZones]int
	var units [][]int
	var one [1][]int
	if _, single := s.R.(*redis.Client); single && len(calls) > 1 && len(calls) <= len(all) {
		for n := range calls {
			all[n] = n
		}
		one[0] = all[:len(calls)]
		units = one[:]
	} else {
		units = s.units(calls)
	}
	var cmdRoom [inlineZones]*redis.Cmd
	cmds := cmdRoom[:0]
	if len(units) > len(cmdRoom) {
		cmds = make([]*redis.Cmd, 0, len(units))
	}
	for _, idx := range units {
		cmds = append(cmds, scriptCall(ctx, calls, idx, load))
	}
	if ap := s.autopipeliner(); ap != nil {
		// The calls return at once; each answer is awaited within the call's deadline (the
		// limiter's Call is Inline on this store: see Inline).
		var futRoom [inlineZones]redis.AutoFuture
		futs := futRoom[:0]
		for _, c := range cmds {
			futs = append(futs, ap.Submit(ctx, c))
		}
		for _, f := range futs {
			if err := edge.Wait(ctx, f); errors.Is(err, edge.ErrTimeout) {
				return nil, nil, err
			}
		}
	} else {
		// Each command carries its own error, read below: a NOSCRIPT of one is not a
		// failure of the others.
		_, _ = s.R.Pipelined(ctx, func(p redis.Pipeliner) error { queue(ctx, p, cmds); return nil })
	}
	out = make([]Reply, len(calls))
	for u, c := range cmds {
		v, err := c.Slice()
		if err != nil && !load && isNoScript(err) {
			missing = append(missing, units[u]...)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if len(v) != 5*len(units[u]) {
			return nil, nil, errReply
		}
		for k, n := range units[u] {
			if out[n], err = parseReply(v[5*k : 5*k+5]); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, missing, nil
}

func queue(ctx context.Context, p doer, cmds []*redis.Cmd) {
	for _, c := range cmds {
		_ = p.Process(ctx, c)
	}
}

// parseReply reads {status, remaining, reset_us, retry_us, member}.
func parseReply(v []any) (Reply, error) {
	if len(v) != 5 {
		return Reply{}, errReply
	}
	st, _ := v[0].(int64)
	rem, _ := v[1].(int64)
	reset, _ := v[2].(int64)
	retry, _ := v[3].(int64)
	member, _ := v[4].(string)
	return Reply{Status: int(st), Remaining: int(rem), Reset: time.Duration(reset) * time.Microsecond,
		Retry: time.Duration(retry) * time.Microsecond, Member: member}, nil
}

func isNoScript(err error) bool {
	return err != nil && strings.Contains(err.Error(), "NOSCRIPT")
}

// Undo removes the refunded admissions (throttle_refund.lua: the log may be a compact string
// or a sorted set).
func (s *RedisStore) Undo(ctx context.Context, rs []Refund) error {
	run := func(load bool) ([]redis.Cmder, error) {
		return s.R.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, r := range rs {
				if load {
					lua.ThrottleRefund.Eval(ctx, p, []string{r.Key}, r.Member)
				} else {
					lua.ThrottleRefund.EvalSha(ctx, p, []string{r.Key}, r.Member)
				}
			}
			return nil
		})
	}
	_, err := run(false)
	if isNoScript(err) {
		// No refund ran (each one needs the script): sending them all with the body is safe.
		_, err = run(true)
	}
	return err
}
