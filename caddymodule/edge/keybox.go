package edge

import "sync"

// KeyBox keeps a script's KEYS for each target (a sale, or a shard of one) boxed as []any,
// built once: a call on a target seen before builds no key names and boxes none. Bounded:
// past Max targets it starts again rather than growing. The gate and the token issuer share
// it (edge.ScriptCall takes the boxed keys as they are).
type KeyBox struct {
	Build func(target string) []string // the script's KEYS of target
	Max   int                          // the most targets kept

	mu sync.RWMutex
	m  map[string][]any
}

// Of is target's boxed keys. The slice is shared: callers append to a copy, never to it.
func (b *KeyBox) Of(target string) []any {
	b.mu.RLock()
	keys, ok := b.m[target]
	b.mu.RUnlock()
	if ok {
		return keys
	}
	names := b.Build(target)
	keys = make([]any, len(names))
	for i, k := range names {
		keys[i] = k
	}
	b.mu.Lock()
	if b.m == nil || len(b.m) >= b.Max {
		b.m = make(map[string][]any)
	}
	b.m[target] = keys
	b.mu.Unlock()
	return keys
}

// Len is how many targets are kept.
func (b *KeyBox) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.m)
}
