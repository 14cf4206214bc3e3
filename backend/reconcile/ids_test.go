package reconcile

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Order ids come from Redis and the URL of GET /orders/{id}; the reconciler trusts the time in
// them. Whatever the input: an id AcceptedAt reads is a UUIDv7 and the time is the one its
// first 48 bits hold; and any UUIDv7 built from a millisecond timestamp reads back as exactly
// that millisecond.
func FuzzAcceptedAt(f *testing.F) {
	f.Add("0190a0b0-0000-7000-8000-000000000000", int64(1_700_000_000_000))
	f.Add("0190a0b0-0000-4000-8000-000000000000", int64(0)) // a v4 uuid
	f.Add("not-a-uuid", int64(-1))
	f.Add("", int64(1<<48-1))
	f.Fuzz(func(t *testing.T, id string, ms int64) {
		if at, ok := AcceptedAt(id); ok {
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 {
				t.Fatalf("AcceptedAt(%q) read a time from a non-v7 id (%v)", id, err)
			}
			want := int64(binary.BigEndian.Uint64(append([]byte{0, 0}, u[:6]...)))
			if at.UnixMilli() != want || at.Nanosecond()%int(time.Millisecond) != 0 {
				t.Fatalf("AcceptedAt(%q) = %v, want %d ms since the epoch", id, at, want)
			}
		} else if u, err := uuid.Parse(id); err == nil && u.Version() == 7 {
			t.Fatalf("AcceptedAt(%q) refused a v7 id", id)
		}
		ms &= 1<<48 - 1 // a v7 id holds 48 bits of milliseconds
		var u uuid.UUID
		binary.BigEndian.PutUint64(u[:8], uint64(ms)<<16|0x7000|uint64(ms)&0x0fff)
		u[8] = 0x80 | byte(ms)&0x3f // the RFC 4122 variant
		at, ok := AcceptedAt(u.String())
		if !ok || at.UnixMilli() != ms {
			t.Fatalf("AcceptedAt(%s) = %v, %v; want %d ms", u, at, ok, ms)
		}
	})
}
