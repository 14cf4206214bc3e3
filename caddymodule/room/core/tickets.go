package core

import (
	"time"
)

// VerifyTicketPlace is the sealer's VerifyTicketPlaceFor, remembered: the place's index (-1 for a ticket
// without one) or ErrInvalidTicket. jkt is the key the ticket is presented as sealed for (the
// bound ticket's, whose proof was checked; "" for a bearer one): a ticket verified inside a
// bound one is no hit for a bearer.
func (g *Gateway) VerifyTicketPlace(ticket, sale, user, jkt string, now time.Time) (int64, error) {
	return g.tickets.verify(g.Sealer, ticket, sale, user, jkt, now)
}

// TicketGrace keeps a ticket valid a while after the end, so a waiter learns `ended`.
const TicketGrace = time.Hour

// PlacedTicket is a ticket carrying the place's queue index (r2), for a waiter after the
// start: his later polls far from the front are answered from memory. "" when the order is
// not drawn yet (before the start) or the user is not waiting. The client keeps the newest
// ticket it is given (a poll's answer carries one when it has a better one).
func (g *Gateway) PlacedTicket(sale, user, jkt string, c *Cached, rep Reply) string {
	if rep.Outcome != Waiting || rep.Now.Before(rep.Starts) || len(c.Room.Lanes) > 0 {
		// A room with lanes keeps a cursor per lane, the gateway's summary only the public
		// one's: its waiters' polls ask Redis (no place index in the ticket).
		return ""
	}
	return g.Sealer.TicketAtFor(sale, user, jkt, c.Room.Ends.Add(TicketGrace), rep.Cursor+rep.Position-1)
}
