package core

import (
	"hash/maphash"
	"sync"
	"time"
)

// Blocklist is the per-instance cache of keys the exact tier has refused, until the time it
// said they may retry (the over-limit cache of Envoy's ratelimit service). While a key is on
// it, this instance refuses the key without asking Redis: a client hammering at 1 000 req/s
// costs Redis one call per retry period, not one per request.
//
// Entries come from Redis refusals, with Redis's own retry time, and (briefly, until the
// probe's answer replaces them) from the flood shield. So it does not refuse a request the
// exact tier would admit, except that a slot freed early (another zone's refund) is noticed
// only when the entry expires.
//
// It is safe for concurrent use and takes the time as a parameter (no clock inside).
type Blocklist struct {
	shards [blocklistShards]blocklistShard
	seed   maphash.Seed
	max    int // entries per shard before a sweep; 0 means no bound
}

const blocklistShards = 32

type blocklistShard struct {
	mu    sync.Mutex
	m     map[string]Block
	swept time.Time // last sweep: a full part is swept at most once a second
}

// Block is one blocklist entry.
type Block struct {
	Until  time.Time // refuse locally until then
	Banned bool      // the refusal is a ban (escalation), not a plain over-limit
}

// NewBlocklist returns an empty blocklist that holds up to about maxEntries keys; beyond
// that, adding sweeps expired entries (at most once a second per part) and, when every entry
// is live, drops the new one (the key then simply costs Redis calls again). Every way in
// (Add, TryAdd, Set) honours the bound: its keys are attacker input. maxEntries <= 0 means
// unbounded.
func NewBlocklist(maxEntries int) *Blocklist {
	b := &Blocklist{seed: maphash.MakeSeed()}
	if maxEntries > 0 {
		b.max = max(1, maxEntries/blocklistShards)
	}
	for i := range b.shards {
		b.shards[i].m = make(map[string]Block)
	}
	return b
}

func (b *Blocklist) shard(key string) *blocklistShard {
	return &b.shards[maphash.String(b.seed, key)%blocklistShards]
}

// Lookup returns the key's live entry at time now.
func (b *Blocklist) Lookup(key string, now time.Time) (Block, bool) {
	s := b.shard(key)
	s.mu.Lock()
	e, ok := s.m[key]
	if ok && !now.Before(e.Until) {
		delete(s.m, key)
		ok = false
	}
	s.mu.Unlock()
	return e, ok
}

// Add records that key is refused until e.Until. A later Until replaces an earlier one,
// never the reverse (two instances' answers may arrive out of order).
func (b *Blocklist) Add(key string, e Block, now time.Time) {
	if !now.Before(e.Until) {
		return
	}
	s := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[key]; ok {
		if old.Until.After(e.Until) {
			return
		}
		s.m[key] = e
		return
	}
	if !b.room(s, now) {
		return
	}
	s.m[key] = e
}

// room reports whether the shard may take one more key, sweeping it when it is full.
func (b *Blocklist) room(s *blocklistShard, now time.Time) bool {
	if b.max <= 0 || len(s.m) < b.max {
		return true
	}
	if now.Sub(s.swept) >= time.Second {
		s.swept = now
		for k, v := range s.m {
			if !now.Before(v.Until) {
				delete(s.m, k)
			}
		}
	}
	return len(s.m) < b.max
}

// TryAdd adds e for key only when the key has no live entry, and reports whether it did.
// Of many concurrent callers exactly one wins, which lets one request probe Redis while the
// others are refused locally.
func (b *Blocklist) TryAdd(key string, e Block, now time.Time) bool {
	if !now.Before(e.Until) {
		return false
	}
	s := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.m[key]
	if ok && now.Before(old.Until) {
		return false
	}
	if !ok && !b.room(s, now) {
		return false // full of live entries: refused locally, without a probe
	}
	s.m[key] = e
	return true
}

// Set records e for key at time now, replacing any entry.
func (b *Blocklist) Set(key string, e Block, now time.Time) {
	s := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok && !b.room(s, now) {
		return
	}
	s.m[key] = e
}

// Remove forgets key.
func (b *Blocklist) Remove(key string) {
	s := b.shard(key)
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}

// Len is the number of entries (live or not yet swept).
func (b *Blocklist) Len() int {
	n := 0
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
