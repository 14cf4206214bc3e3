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

// answer is what the shop said about one session.
type answer struct {
	user    string // "" when signed out
	expires time.Time
}

// sessionCache is a bounded LRU of answers. One mutex: a hit is a map lookup and a list move,
// far cheaper than the call it saves.
type sessionCache struct {
	mu      sync.Mutex
	max     int
	entries map[sessionKey]*list.Element
	order   *list.List // front: most recently used
}

type cacheEntry struct {
	key sessionKey
	answer
}

func newSessionCache(max int) *sessionCache {
	return &sessionCache{max: max, entries: make(map[sessionKey]*list.Element, min(max, 1024)), order: list.New()}
}

// get returns the live answer for k.
func (c *sessionCache) get(k sessionKey, now time.Time) (answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return answer{}, false
	}
	ent := e.Value.(*cacheEntry)
	if !now.Before(ent.expires) {
		c.order.Remove(e)
		delete(c.entries, k)
		return answer{}, false
	}
	c.order.MoveToFront(e)
	return ent.answer, true
}

// put stores a, evicting the least recently used entry beyond max.
func (c *sessionCache) put(k sessionKey, a answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[k]; ok {
		e.Value.(*cacheEntry).answer = a
		c.order.MoveToFront(e)
		return
	}
	c.entries[k] = c.order.PushFront(&cacheEntry{key: k, answer: a})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

// len is the number of entries (tests).
func (c *sessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
