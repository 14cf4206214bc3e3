package edge

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultMaxPending is how many Redis calls one handler may have outstanding before it sheds
// new requests (max_pending). It is far above what a healthy Redis ever holds (a decision
// takes a fraction of a millisecond, so even tens of thousands of requests per second keep a
// few hundred in flight) and low enough that an overloaded or stalled Redis cannot make the
// gateway pile up goroutines and queued commands without bound.
const DefaultMaxPending = 4096

// Pending bounds the Redis calls a handler has outstanding. A call counts from the moment it
// is sent until Redis answers it, even when the request stopped waiting at its timeout: a
// timed-out call still sits in the client's queue and in Redis's, and it is exactly those that
// pile up when Redis cannot keep up. When the bound is reached the handler answers at once
// (503, or its zones' failure policy) instead of adding to the pile: load shedding, so an
// overload costs fast refusals and bounded memory rather than slow timeouts for everybody.
type Pending struct {
	max int64
	n   atomic.Int64
}

// NewPending bounds outstanding calls to max (<= 0: unbounded).
func NewPending(max int) *Pending { return &Pending{max: int64(max)} }

// TryAcquire takes a slot for one call; false means the handler must shed the request.
func (p *Pending) TryAcquire() bool {
	if p == nil || p.max <= 0 {
		return true
	}
	if p.n.Add(1) > p.max {
		p.n.Add(-1)
		return false
	}
	return true
}

// Release gives the slot back once Redis answered (or the call failed).
func (p *Pending) Release() {
	if p == nil || p.max <= 0 {
		return
	}
	p.n.Add(-1)
}

// Len is the number of calls outstanding now.
func (p *Pending) Len() int64 {
	if p == nil {
		return 0
	}
	return p.n.Load()
}

// SampledLogger keeps a handler's per-request warnings from becoming a cost of their own when
// Redis is in trouble and every request fails the same way: per second and message, the first
// five entries are written, then one in a thousand. The metrics count every failure.
func SampledLogger(l *zap.Logger) *zap.Logger {
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, 5, 1000)
	}))
}
