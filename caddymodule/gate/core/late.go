package core

import "sync"

// lateCap bounds how many users' late answers one gateway remembers (all sales together):
// about 100 bytes each, so at most a few tens of MB. Beyond it a late click asks Redis again.
const lateCap = 1 << 18

// lateAnswers remembers, per sold-out sale or shard, what Redis said of each user who clicked
// after the sell-out: his order id ("already_bought") or "" (not a buyer: "sold_out").
//
// After a sell-out the buyers hash changes only when a unit comes back (compensation, unpaid
// release, an operator's stock add), and each of those publishes "restock:", which moves the
// sale's generation on: answers of an older generation are dropped, never served. So a bot
// retrying after the sell-out costs one read of Redis, not one per click, and a buyer is
// still told his order.
type lateAnswers[G comparable] struct {
	mu    sync.Mutex
	sales map[string]*lateSale[G]
	n     int
}

type lateSale[G comparable] struct {
	gen   G
	users map[string]string
}

// get returns the remembered answer for user in target at generation gen.
func (c *lateAnswers[G]) get(target, user string, gen G) (order string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sales[target]
	if s == nil {
		return "", false
	}
	if s.gen != gen {
		c.n -= len(s.users)
		delete(c.sales, target)
		return "", false
	}
	order, ok = s.users[user]
	return order, ok
}

// put remembers Redis's answer, read after gen was taken.
func (c *lateAnswers[G]) put(target, user, order string, gen G) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sales == nil {
		c.sales = make(map[string]*lateSale[G])
	}
	s := c.sales[target]
	if s != nil && s.gen != gen {
		c.n -= len(s.users)
		s = nil
	}
	if s == nil {
		s = &lateSale[G]{gen: gen, users: make(map[string]string)}
		c.sales[target] = s
	}
	if _, seen := s.users[user]; seen || c.n >= lateCap {
		return
	}
	s.users[user] = order
	c.n++
}
