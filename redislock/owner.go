package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type ownerKey struct{}

// WithOwner returns a context carrying owner: every Obtain or TryObtain with that context
// (and no Options.Owner) acquires as owner, so nested calls re-enter a lock the caller holds
// instead of deadlocking on it.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner carried by ctx, or "".
func OwnerFrom(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}

// NewOwner returns a fresh random owner id.
func NewOwner() string { return randomID() }

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
