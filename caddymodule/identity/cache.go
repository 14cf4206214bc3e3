package identity

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// sessionKey is the cache key of a credential: its SHA-256, so the cache (and a heap dump of
// the gateway) never holds a usable session.
type sessionKey [sha256.Size]byte

// lru is a bounded map from credential hashes to V that forgets the least recently used entry
// first. One mutex: a hit is a map lookup and a list move. seckill_session uses one;
// seckill_identity's verifiedCache shards several.
type lru[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[sessionKey]*list.Element
	order   *list.List // front: most recently used
}

type lruEntry[V any] struct {
	key   sessionKey
	value V
}

// init readies c for at most max entries.
func (c *lru[V]) init(max int) {
	c.max, c.entries, c.order = max, make(map[sessionKey]*list.Element, min(max, 1024)), list.New()
}

// get returns the value of k and marks it used.
func (c *lru[V]) get(k sessionKey) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).value, true
}

// put stores v, evicting the least recently used entry beyond max.
func (c *lru[V]) put(k sessionKey, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, v)
}

func (c *lru[V]) putLocked(k sessionKey, v V) {
	if e, ok := c.entries[k]; ok {
		e.Value.(*lruEntry[V]).value = v
		c.order.MoveToFront(e)
		return
	}
	if c.max <= 0 {
		return
	}
	c.entries[k] = c.order.PushFront(&lruEntry[V]{key: k, value: v})
	c.evict()
}

// remove forgets k.
func (c *lru[V]) remove(k sessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(k)
}

func (c *lru[V]) removeLocked(k sessionKey) {
	if e, ok := c.entries[k]; ok {
		c.order.Remove(e)
		delete(c.entries, k)
	}
}

// resize sets the bound, evicting the least recently used entries beyond it.
func (c *lru[V]) resize(max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = max
	c.evict()
}

// evict drops the least recently used entries beyond max; c.mu is held.
func (c *lru[V]) evict() {
	for c.order.Len() > max(c.max, 0) {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*lruEntry[V]).key)
	}
}

// len is the number of entries (tests).
func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// answer is what the shop said about one session.
type answer struct {
	user    string // "" when signed out
	expires time.Time
}

// sessionCache is seckill_session's cache of the shop's answers: an lru whose entries end at
// their expiry.
type sessionCache struct {
	lru[answer]
}

func newSessionCache(max int) *sessionCache {
	c := &sessionCache{}
	c.init(max)
	return c
}

// get returns the live answer for k; an expired one is dropped.
func (c *sessionCache) get(k sessionKey, now time.Time) (answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return answer{}, false
	}
	a := e.Value.(*lruEntry[answer]).value
	if !now.Before(a.expires) {
		c.removeLocked(k)
		return answer{}, false
	}
	c.order.MoveToFront(e)
	return a, true
}
