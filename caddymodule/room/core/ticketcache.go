package core

import (
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// The poll path verifies the waiter's ticket on every poll: an HMAC-SHA256 and a dozen
// allocations, the largest cost of a poll answered from memory. A waiter
// polls with the same ticket for minutes, so each gateway keeps the tickets it verified: the
// ticket's exact string with what it was verified for (sale, user) and what it says (index,
// expiry). A hit checks the same sale and user and that the ticket has not expired; any other
// ticket string (forged, altered, another key) misses and is verified in full, so the cache
// never accepts what the sealer would refuse. Bounded: ticketShards x ticketsPerShard
// entries (~16 MB of tickets at most); a full shard starts over. A handler's cache lives as
// long as its configuration, so a key withdrawn from token_keys (a new configuration) drops
// every ticket the cache holds.

const (
	ticketShards    = 16
	ticketsPerShard = 8192
)

type verifiedTicket struct {
	sale, user string
	jkt        string // the key the ticket was sealed for ("" for a bearer ticket)
	index      int64
	exp        time.Time
}

type ticketShard struct {
	mu sync.Mutex
	m  map[string]verifiedTicket
}

// ticketCache is the set of tickets a handler verified.
type ticketCache struct {
	seed   maphash.Seed
	shards [ticketShards]ticketShard
}

func newTicketCache() *ticketCache {
	return &ticketCache{seed: maphash.MakeSeed()}
}

func (c *ticketCache) shard(ticket string) *ticketShard {
	return &c.shards[maphash.String(c.seed, ticket)%ticketShards]
}

// verify is VerifyTicketPlace over this cache (nil: no cache).
func (c *ticketCache) verify(sealer *sealed.Sealer, ticket, sale, user, jkt string, now time.Time) (int64, error) {
	if c == nil {
		return sealer.VerifyTicketPlaceFor(ticket, sale, user, jkt, now)
	}
	s := c.shard(ticket)
	s.mu.Lock()
	v, ok := s.m[ticket]
	s.mu.Unlock()
	if ok && v.sale == sale && v.user == user && v.jkt == jkt && now.Before(v.exp) {
		return v.index, nil
	}
	index, err := sealer.VerifyTicketPlaceFor(ticket, sale, user, jkt, now)
	if err != nil {
		return index, err
	}
	exp, ok := ticketExpiry(ticket)
	if !ok {
		return index, nil
	}
	s.mu.Lock()
	if s.m == nil || len(s.m) >= ticketsPerShard {
		s.m = make(map[string]verifiedTicket, 64)
	}
	s.m[ticket] = verifiedTicket{sale: sale, user: user, jkt: jkt, index: index, exp: exp}
	s.mu.Unlock()
	return index, nil
}

// ticketExpiry reads the expiry of a ticket the sealer verified (r1.<kid>.<exp>.<mac> or
// r2.<kid>.<exp>.<index>.<mac>: the third field, base 36 unix seconds).
func ticketExpiry(ticket string) (time.Time, bool) {
	_, rest, ok1 := strings.Cut(ticket, ".")
	_, rest, ok2 := strings.Cut(rest, ".")
	e, _, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	v, err := strconv.ParseInt(e, 36, 64)
	if err != nil || v <= 0 {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}
