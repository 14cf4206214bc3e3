package edge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// call is the context an inline Call (Caller.Inline) gives its function: the request's values,
// none of its deadline or cancellation (as context.WithoutCancel: the command is never cut off
// mid-flight), and the call's bounds, which Wait applies.
type call struct {
	parent    context.Context
	c         Caller
	abandoned bool // a Wait stopped at the deadline: the slot is given back by its command
}

func (*call) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*call) Done() <-chan struct{}       { return nil }
func (*call) Err() error                  { return nil }
func (c *call) Value(key any) any {
	if key == callKey {
		return c
	}
	return c.parent.Value(key)
}

type callKeyType struct{}

var callKey any = callKeyType{}

// callOf is the inline call ctx belongs to, nil outside one.
func callOf(ctx context.Context) *call {
	if c, ok := ctx.(*call); ok {
		return c
	}
	c, _ := ctx.Value(callKey).(*call)
	return c
}

// Future is a command on its way to Redis: go-redis's AutoFuture (AutoPipeliner.Submit).
type Future interface {
	Wait() error
	WaitContext(ctx context.Context) error
}

// Wait waits for f's command, sent inside an inline Call (ctx is the one Call gave its
// function), until the call's deadline: past it Wait returns ErrTimeout and the call's slot of
// max_pending stays held until the command is answered. Outside a Call it waits for the answer.
func Wait(ctx context.Context, f Future) error {
	cl := callOf(ctx)
	if cl == nil {
		return f.Wait()
	}
	timeout := cl.c.Timeout
	if dl, ok := cl.parent.Deadline(); ok {
		if left := time.Until(dl); timeout <= 0 || left < timeout {
			timeout = left
		}
	}
	if timeout <= 0 {
		if cl.parent.Done() == nil {
			return f.Wait()
		}
		err := f.WaitContext(cl.parent)
		if err != nil && err == cl.parent.Err() {
			cl.abandon(f)
		}
		return err
	}
	d := deadlines.Get().(*deadline)
	d.t.Reset(timeout)
	err := f.WaitContext(d)
	if d.t.Stop() {
		deadlines.Put(d) // its channel is still open: reusable
	} else if err == context.DeadlineExceeded {
		// Our deadline passed first (a command's own error is never this value: the
		// autopipeliner does not honour a command's context after it was queued).
		cl.abandon(f)
		return ErrTimeout
	}
	return err
}

// abandon leaves f's command to finish without the request: the slot of max_pending is
// given back when it is answered (the only goroutine of a call, and only of a late one).
func (c *call) abandon(f Future) {
	if c.abandoned {
		return
	}
	c.abandoned = true
	p := c.c.Pending
	go func() {
		_ = f.Wait()
		p.Release()
	}()
}

// deadline is a context whose Done closes when its timer fires: the deadline of one Wait,
// pooled while it has not fired (three allocations per call less than a context.WithTimeout:
// the context, its timer and its channel).
type deadline struct {
	done chan struct{}
	t    *time.Timer
}

func (*deadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d *deadline) Done() <-chan struct{}     { return d.done }
func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
func (*deadline) Value(any) any { return nil }

var deadlines = sync.Pool{New: func() any {
	d := &deadline{done: make(chan struct{})}
	d.t = time.AfterFunc(time.Hour, func() { close(d.done) })
	d.t.Stop()
	return d
}}

// Submitter sends a command without waiting: go-redis's deferred autopipeliner
// (redis.Client.AsyncAutoPipeline), which also loads scripts (on its underlying client).
type Submitter interface {
	Submit(ctx context.Context, cmd redis.Cmder) redis.AutoFuture
	redis.Scripter
}

// Script runs s on keys and args through sub inside an inline Call (see Wait): EVALSHA, its
// answer waited for within the call's deadline. When Redis answers NOSCRIPT (a restarted or
// flushed Redis) the script is loaded (SCRIPT LOAD, on a pooled connection, bounded by the
// client's socket timeouts, not the call's) and sent again. The reply is the command's; its
// error is the command's, or ErrTimeout.
func Script(ctx context.Context, sub Submitter, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	a := ScriptArgs(len(keys) + len(args))
	for _, k := range keys {
		a = append(a, k)
	}
	return ScriptCall(ctx, sub, s, len(keys), append(a, args...))
}

// ScriptArgs is the start of a script call's arguments for ScriptCall, with room for n more
// (its keys, then its args, appended by the caller: keys boxed once and kept, such as a sale's,
// cost no allocation per call).
func ScriptArgs(n int) []any { return make([]any, scriptHead, scriptHead+n) }

// scriptHead is the command, the digest and the key count.
const scriptHead = 3

// ScriptCall is Script on a: ScriptArgs, then nkeys keys, then the args.
func ScriptCall(ctx context.Context, sub Submitter, s *redis.Script, nkeys int, a []any) *redis.Cmd {
	a[0], a[1], a[2] = evalsha, boxedHash(s), nkeys
	for try := 0; ; try++ {
		cmd := redis.NewCmd(ctx, a...)
		err := Wait(ctx, sub.Submit(ctx, cmd))
		if errors.Is(err, ErrTimeout) {
			cmd = redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		if try > 0 || !IsNoScript(err) {
			return cmd
		}
		if err := s.Load(ctx, sub).Err(); err != nil {
			cmd = redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
	}
}

// evalsha is the command's name, boxed once.
var evalsha any = "evalsha"

// hashes are the scripts' digests, boxed once (*redis.Script -> any).
var hashes sync.Map

func boxedHash(s *redis.Script) any {
	if h, ok := hashes.Load(s); ok {
		return h
	}
	h, _ := hashes.LoadOrStore(s, any(s.Hash()))
	return h
}

// IsNoScript reports whether err is Redis's NOSCRIPT (the script is not in its cache).
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
