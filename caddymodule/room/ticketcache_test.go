//go:build integration

package room

import (
	"testing"
	"time"
)

// The ticket cache answers only what the sealer would: a cached ticket for its own sale and
// user until it expires; anything else (another user or sale, an altered ticket, an expired
// one, a ticket under another key) is verified in full and refused.
func TestTheTicketCacheNeverAcceptsWhatTheSealerRefuses(t *testing.T) {
	sealer := testSealer(t)
	other := testSealer(t, "k2")
	now := time.Unix(1_800_000_000, 0)
	h := &Room{sealer: sealer, tickets: newTicketCache()}
	tk := sealer.TicketAt("s1", "alice", now.Add(time.Minute), 42)
	for range 2 { // verified, then cached
		if idx, err := h.verifyTicketPlace(tk, "s1", "alice", "", now); err != nil || idx != 42 {
			t.Fatalf("a genuine ticket: %d %v", idx, err)
		}
	}
	if n := len(h.tickets.shard(tk).m); n != 1 {
		t.Fatalf("%d tickets cached in its shard, want 1", n)
	}
	altered := tk[:len(tk)-1] + string(tk[len(tk)-1]^1)
	for name, c := range map[string]struct {
		ticket, sale, user string
		at                 time.Time
	}{
		"another user":            {tk, "s1", "bob", now},
		"another sale":            {tk, "s2", "alice", now},
		"expired, though cached":  {tk, "s1", "alice", now.Add(time.Minute)},
		"an altered mac":          {altered, "s1", "alice", now},
		"another gateway's key":   {other.TicketAt("s1", "alice", now.Add(time.Minute), 1), "s1", "alice", now},
		"an unplaced ticket, bob": {sealer.Ticket("s1", "alice", now.Add(time.Minute)), "s1", "bob", now},
	} {
		if _, err := h.verifyTicketPlace(c.ticket, c.sale, c.user, "", c.at); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A r1 ticket (no place) is cached with index -1.
	r1 := sealer.Ticket("s1", "alice", now.Add(time.Minute))
	for range 2 {
		if idx, err := h.verifyTicketPlace(r1, "s1", "alice", "", now); err != nil || idx != -1 {
			t.Fatalf("an r1 ticket: %d %v", idx, err)
		}
	}
	// The ticket inside a bound one is sealed for its key: verified (and cached) for that key,
	// it is no bearer ticket, cached or not.
	inner := sealer.TicketAtFor("s1", "alice", "thumbprint", now.Add(time.Minute), 7)
	if idx, err := h.verifyTicketPlace(inner, "s1", "alice", "thumbprint", now); err != nil || idx != 7 {
		t.Fatalf("a bound ticket's inside, for its key: %d %v", idx, err)
	}
	for _, jkt := range []string{"", "another"} {
		if _, err := h.verifyTicketPlace(inner, "s1", "alice", jkt, now); err == nil {
			t.Errorf("a bound ticket's inside, presented for key %q: accepted", jkt)
		}
	}
	// Bounded: a shard that fills starts over.
	for i := range 3 * ticketsPerShard * ticketShards / 2 {
		_, _ = h.verifyTicketPlace(sealer.TicketAt("s1", "alice", now.Add(time.Minute), int64(i)), "s1", "alice", "", now)
	}
	for i := range h.tickets.shards {
		if n := len(h.tickets.shards[i].m); n > ticketsPerShard {
			t.Fatalf("shard %d holds %d tickets, more than %d", i, n, ticketsPerShard)
		}
	}
}
