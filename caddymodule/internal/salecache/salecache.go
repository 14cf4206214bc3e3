// Package salecache is what a gateway keeps per sale, read from Redis (a room's settings, a
// draw's window): a concurrent map by sale id, bounded because anyone can name any sale. When a
// new sale would make it hold more than Max, it is emptied; each sale is read again at its next
// request.
package salecache

import "sync"

// Max is how many sales a Cache holds at most.
const Max = 10000

// Cache holds one value per sale. The zero value is empty and ready.
type Cache[T any] struct {
	m  sync.Map // sale -> T
	mu sync.Mutex
	n  int64
}

// Load is the sale's value, if the cache holds one.
func (c *Cache[T]) Load(sale string) (v T, ok bool) {
	x, ok := c.m.Load(sale)
	if ok {
		v = x.(T)
	}
	return v, ok
}

// Store keeps v for sale. A sale the cache does not hold yet counts toward Max: beyond it the
// cache is emptied first. Stores take a lock (they follow a Redis read, loads are the hot
// path), so the bound holds exactly under concurrent stores.
func (c *Cache[T]) Store(sale string, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, held := c.m.Load(sale); !held {
		c.n++
		if c.n > Max {
			c.m.Clear()
			c.n = 1
		}
	}
	c.m.Store(sale, v)
}

// Clear empties the cache.
func (c *Cache[T]) Clear() {
	c.mu.Lock()
	c.m.Clear()
	c.n = 0
	c.mu.Unlock()
}
