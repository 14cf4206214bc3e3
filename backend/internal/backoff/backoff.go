// Package backoff is the capped exponential backoff of the backend's loops (the consumer's
// reconnects and writes, the webhook worker's claims).
package backoff

import "time"

// Backoff is a capped exponential backoff with jitter-free doubling (the jitter is irrelevant
// with a handful of backend instances).
type Backoff struct{ cur, min, max time.Duration }

// New returns a backoff that starts at min and doubles up to max.
func New(min, max time.Duration) *Backoff { return &Backoff{min: min, max: max} }

// Next is the wait before the next try.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur *= 2
		if b.cur > b.max {
			b.cur = b.max
		}
	}
	return b.cur
}

// Reset starts again from min after a success.
func (b *Backoff) Reset() { b.cur = 0 }
