package core

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// SessionKey is the cache key of a credential: its SHA-256, so the cache (and a heap dump of
// the gateway) never holds a usable session.
type SessionKey [sha256.Size]byte

// lru is a bounded map from credential hashes to V that forgets the least recently used entry
// first. One mutex: a hit is a map lookup and a list move. seckill_session uses one;
// seckill_identity's VerifiedCache shards several.
type lru[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[SessionKey]*list.Element
	order   *list.List // front: most recently used
}

type lruEntry[V any] struct {
	key   SessionKey
	value V
}

// init readies c for at most max entries.
func (c *lru[V]) init(max int) {
	c.max, c.entries, c.order = max, make(map[SessionKey]*list.Element, min(max, 1024)), list.New()
}

// get returns the value of k and marks it used.
func (c *lru[V]) get(k SessionKey) (V, bool) {
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
func (c *lru[V]) put(k SessionKey, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, v)
}

func (c *lru[V]) putLocked(k SessionKey, v V) {
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
func (c *lru[V]) remove(k SessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(k)
}

func (c *lru[V]) removeLocked(k SessionKey) {
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

// Answer is what the shop said about one session.
type Answer struct {
	User    string // "" when signed out
	Expires time.Time
}

// SessionCache is seckill_session's cache of the shop's answers: an lru whose entries end at
// their expiry.
type SessionCache struct {
	lru lru[Answer]
}

// NewSessionCache returns a cache of at most max answers.
func NewSessionCache(max int) *SessionCache {
	c := &SessionCache{}
	c.lru.init(max)
	return c
}

// Get returns the live answer for k; an expired one is dropped.
func (c *SessionCache) Get(k SessionKey, now time.Time) (Answer, bool) {
	l := &c.lru
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[k]
	if !ok {
		return Answer{}, false
	}
	a := e.Value.(*lruEntry[Answer]).value
	if !now.Before(a.Expires) {
		l.removeLocked(k)
		return Answer{}, false
	}
	l.order.MoveToFront(e)
	return a, true
}

// Put stores the answer for k, forgetting the least recently used beyond the bound.
func (c *SessionCache) Put(k SessionKey, a Answer) { c.lru.put(k, a) }

// Resize sets the bound (a reload's max_entries), forgetting the least recently used beyond it.
func (c *SessionCache) Resize(max int) { c.lru.resize(max) }

// Bound is the most answers kept.
func (c *SessionCache) Bound() int {
	c.lru.mu.Lock()
	defer c.lru.mu.Unlock()
	return c.lru.max
}

// Len is the number of answers kept.
func (c *SessionCache) Len() int { return c.lru.len() }

// Keys are the keys of the answers kept: hashes, never a credential.
func (c *SessionCache) Keys() []SessionKey {
	c.lru.mu.Lock()
	defer c.lru.mu.Unlock()
	keys := make([]SessionKey, 0, len(c.lru.entries))
	for k := range c.lru.entries {
		keys = append(keys, k)
	}
	return keys
}
