package sealed

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// ErrInvalidTicket refuses a ticket: a client learns nothing finer than "invalid".
var ErrInvalidTicket = errors.New("invalid ticket")

// maxSealed bounds what the parsers look at: anything longer is refused unread (a bound
// placed ticket is about 130 characters).
const maxSealed = 160

// A ticket is
//
//	r1.<kid>.<exp>.<mac>
//
// exp in unix seconds, base 36; mac over (sale, user, exp) under the ticket domain. Sale and
// user come from the request: a ticket of another user or another sale fails its MAC. The
// place itself is not in the ticket: the gateway derives it from (sale, user).
const ticketVersion = "r1"

// Ticket seals a ticket for (sale, user) valid until exp.
func (s *Sealer) Ticket(sale, user string, exp time.Time) string {
	return s.TicketFor(sale, user, "", exp)
}

// TicketFor seals a ticket for (sale, user) valid until exp, to be bound (BindTicket) to the
// key of thumbprint jkt: its MAC covers jkt too ("" for a bearer ticket), so the ticket inside
// a bound one, cut out of it, verifies for no one (VerifyTicketPlaceFor with jkt "").
func (s *Sealer) TicketFor(sale, user, jkt string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 36)
	kid, sum := s.sign(domainTicket, withKey(jkt, sale, user, e)...)
	return ticketVersion + "." + kid + "." + e + "." + sum
}

// withKey is a ticket's MAC parts, with the thumbprint of the key it is bound to when there is
// one: a bound ticket's MAC has one part more than a bearer one's, so neither is the other.
func withKey(jkt string, parts ...string) []string {
	if jkt == "" {
		return parts
	}
	return append(parts, jkt)
}

// VerifyTicket checks a ticket presented by user for sale at now.
func (s *Sealer) VerifyTicket(ticket, sale, user string, now time.Time) error {
	_, err := s.VerifyTicketPlace(ticket, sale, user, now)
	return err
}

// A placed ticket also carries the place's index in the queue once the order is
// drawn:
//
//	r2.<kid>.<exp>.<index>.<mac>
//
// index in base 36, mac over (sale, user, exp, index) under its own domain. The index is the
// place's rank in the queue's sorted set when sealed; it only falls afterwards (places ahead
// leave, none is ever inserted ahead once the order is drawn), so index - the room's cursor
// bounds how far the waiter stands from the front, and a gateway answers a far waiter from
// memory.
const placedTicketVersion = "r2"

// TicketAt seals a placed ticket for (sale, user) valid until exp, at queue index index.
func (s *Sealer) TicketAt(sale, user string, exp time.Time, index int64) string {
	return s.TicketAtFor(sale, user, "", exp, index)
}

// TicketAtFor is TicketAt for a ticket to be bound to the key of thumbprint jkt (TicketFor).
func (s *Sealer) TicketAtFor(sale, user, jkt string, exp time.Time, index int64) string {
	e := strconv.FormatInt(exp.Unix(), 36)
	i := strconv.FormatInt(index, 36)
	kid, sum := s.sign(domainPlacedTicket, withKey(jkt, sale, user, e, i)...)
	return placedTicketVersion + "." + kid + "." + e + "." + i + "." + sum
}

// VerifyTicketPlace checks a ticket like VerifyTicket and returns the place's index it
// carries, -1 for a ticket without one (r1).
func (s *Sealer) VerifyTicketPlace(ticket, sale, user string, now time.Time) (int64, error) {
	return s.VerifyTicketPlaceFor(ticket, sale, user, "", now)
}

// VerifyTicketPlaceFor is VerifyTicketPlace for the ticket inside a bound one, sealed for the
// key of thumbprint jkt (UnbindTicket checked the proof's key against it); jkt "" for a bearer
// ticket.
func (s *Sealer) VerifyTicketPlaceFor(ticket, sale, user, jkt string, now time.Time) (int64, error) {
	if len(ticket) > maxSealed || !contract.ValidID(sale) || !contract.ValidID(user) {
		return -1, ErrInvalidTicket
	}
	p := strings.Split(ticket, ".")
	switch {
	case len(p) == 4 && p[0] == ticketVersion:
		exp, ok := parseExp(p[2])
		if !ok || !s.check(domainTicket, p[1], p[3], withKey(jkt, sale, user, p[2])...) || !now.Before(exp) {
			return -1, ErrInvalidTicket
		}
		return -1, nil
	case len(p) == 5 && p[0] == placedTicketVersion:
		exp, ok := parseExp(p[2])
		idx, okI := parseIndex(p[3])
		if !ok || !okI || !s.check(domainPlacedTicket, p[1], p[4], withKey(jkt, sale, user, p[2], p[3])...) || !now.Before(exp) {
			return -1, ErrInvalidTicket
		}
		return idx, nil
	}
	return -1, ErrInvalidTicket
}

// parseIndex reads a place's index: base 36, canonical (no sign, no leading zero), below 2^40.
func parseIndex(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 8 || (len(s) > 1 && s[0] == '0') || s[0] == '-' || s[0] == '+' {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 36, 64)
	if err != nil || v < 0 || v >= 1<<40 {
		return 0, false
	}
	return v, true
}

func parseExp(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > 13 || s[0] == '-' || s[0] == '+' {
		return time.Time{}, false
	}
	v, err := strconv.ParseInt(s, 36, 64)
	if err != nil || v <= 0 {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}

// A ticket bound to a device's key (device_binding, caddymodule/dpop) wraps a ticket:
//
//	b.<kid>.<mac>.<ticket>
//
// mac over (sale, user, ticket, jkt) under the bound domain, jkt the RFC 7638 thumbprint of the
// key the page holds. The thumbprint is not in the ticket: it comes from the DPoP proof of each
// poll, so a copy polled with another key (or none) fails here.
const boundTicketPrefix = "b."

// BindTicket seals ticket (of TicketFor or TicketAtFor with the same jkt) to the key of
// thumbprint jkt; jkt "" returns ticket as it is. The ticket inside is itself sealed for jkt,
// so cutting the wrapper off leaves nothing a bearer can poll with.
func (s *Sealer) BindTicket(ticket, sale, user, jkt string) string {
	if jkt == "" {
		return ticket
	}
	kid, sum := s.sign(domainBoundTicket, sale, user, ticket, jkt)
	return boundTicketPrefix + kid + "." + sum + "." + ticket
}

// TicketBound reports whether ticket claims to be bound to a device's key: it is then
// presented with a proof of that key, whose thumbprint UnbindTicket takes.
func TicketBound(ticket string) bool { return strings.HasPrefix(ticket, boundTicketPrefix) }

// UnbindTicket returns the ticket inside a bound one, checked against the thumbprint jkt of
// the proof presented with it (ErrInvalidTicket when it was bound to another key, or forged).
// A ticket that is not bound is returned as it is.
func (s *Sealer) UnbindTicket(ticket, sale, user, jkt string) (string, error) {
	rest, ok := strings.CutPrefix(ticket, boundTicketPrefix)
	if !ok {
		return ticket, nil
	}
	if len(ticket) > maxSealed || jkt == "" {
		return "", ErrInvalidTicket
	}
	kid, rest, _ := strings.Cut(rest, ".")
	sum, inner, _ := strings.Cut(rest, ".")
	if inner == "" || !s.check(domainBoundTicket, kid, sum, sale, user, inner, jkt) {
		return "", ErrInvalidTicket
	}
	return inner, nil
}
