package core

import (
	"hash/maphash"
	"sync"
	"time"
)

// Shield is the coarse per-instance flood shield in front of Redis: a fixed window per key,
// counting the requests this instance has admitted or still has in flight to Redis. A request
// the shield refuses never reaches Redis.
//
// Requests that end up refused are refunded, so the count is "admitted + in flight". Since a
// fixed window that started less than one window ago lies inside the sliding window that ends
// now, what this instance admitted in it is at most what the exact tier counts; with the
// shield's limit equal to the zone's limit it therefore only refuses requests the exact tier
// would refuse too, while bounding how many concurrent requests of one key can be in flight
// to Redis at once (a burst of 1 000 concurrent requests sends at most `limit` to Redis).
//
// Its keys are attacker input, so its memory is bounded: at most about maxEntries keys. A new
// key that finds its part full evicts the part's oldest key (first in, first out: O(1), no
// sweep under a spray of new keys). An evicted key merely loses its local count: the exact
// tier still holds it.
// It takes the time as a parameter (no clock inside).
type Shield struct {
	shards [shieldShards]shieldShard
	seed   maphash.Seed
	limit  int64
	window time.Duration
	max    int // keys per shard
}

const shieldShards = 32

// MaxShieldEntries bounds each zone's shield.
const MaxShieldEntries = 100_000

type shieldShard struct {
	mu   sync.Mutex
	m    map[string]shieldWindow // by value: a new key costs no allocation of its own
	ring []string                // the keys of m in insertion order, oldest at next once full
	next int
}

type shieldWindow struct {
	end time.Time
	n   int64
}

// NewShield returns a shield admitting up to limit requests per window per key, holding at
// most about maxEntries keys (<= 0: MaxShieldEntries).
func NewShield(limit int, window time.Duration, maxEntries int) *Shield {
	if maxEntries <= 0 {
		maxEntries = MaxShieldEntries
	}
	s := &Shield{seed: maphash.MakeSeed(), limit: int64(limit), window: window, max: max(1, maxEntries/shieldShards)}
	for i := range s.shards {
		s.shards[i].m = make(map[string]shieldWindow)
	}
	return s
}

func (s *Shield) shard(key string) *shieldShard {
	return &s.shards[maphash.String(s.seed, key)%shieldShards]
}

// Take counts one request for key at time now. When the shield refuses it, nothing is
// counted and reset is when the key's window ends.
func (s *Shield) Take(key string, now time.Time) (ok bool, reset time.Time) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	w, found := sh.m[key]
	if !found || !now.Before(w.end) {
		if !found {
			sh.admit(key, s.max)
		}
		w.end, w.n = now.Add(s.window), 0
	}
	if w.n >= s.limit {
		return false, w.end // a full window: not new, not reset, unchanged
	}
	w.n++
	sh.m[key] = w
	return true, time.Time{}
}

// Refund undoes one Take whose request was refused by the exact tier or by another zone.
func (s *Shield) Refund(key string) {
	sh := s.shard(key)
	sh.mu.Lock()
	if w, ok := sh.m[key]; ok && w.n > 0 {
		w.n--
		sh.m[key] = w
	}
	sh.mu.Unlock()
}

// Len is the number of keys held.
func (s *Shield) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// admit makes room for a new key (which the caller then stores), evicting the oldest one when
// the part holds limit keys.
func (sh *shieldShard) admit(key string, limit int) {
	if len(sh.ring) < limit {
		sh.ring = append(sh.ring, key)
	} else {
		delete(sh.m, sh.ring[sh.next])
		sh.ring[sh.next] = key
		sh.next = (sh.next + 1) % limit
	}
}
