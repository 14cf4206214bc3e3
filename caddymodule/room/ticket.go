package room

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
)

// Errors of the sealed strings. A client learns nothing finer than "invalid".
var (
	ErrInvalidTicket    = errors.New("invalid ticket")
	ErrInvalidChallenge = errors.New("invalid challenge")
)

// maxSealed bounds what the parsers look at: anything longer is refused unread.
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
	e := strconv.FormatInt(exp.Unix(), 36)
	kid, sum := s.sign(domainTicket, sale, user, e)
	return ticketVersion + "." + kid + "." + e + "." + sum
}

// VerifyTicket checks a ticket presented by user for sale at now.
func (s *Sealer) VerifyTicket(ticket, sale, user string, now time.Time) error {
	_, err := s.VerifyTicketPlace(ticket, sale, user, now)
	return err
}

// A placed ticket (issue 28) also carries the place's index in the queue once the order is
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
	e := strconv.FormatInt(exp.Unix(), 36)
	i := strconv.FormatInt(index, 36)
	kid, sum := s.sign(domainPlacedTicket, sale, user, e, i)
	return placedTicketVersion + "." + kid + "." + e + "." + i + "." + sum
}

// VerifyTicketPlace checks a ticket like VerifyTicket and returns the place's index it
// carries, -1 for a ticket without one (r1).
func (s *Sealer) VerifyTicketPlace(ticket, sale, user string, now time.Time) (int64, error) {
	if len(ticket) > maxSealed || !contract.ValidID(sale) || !contract.ValidID(user) {
		return -1, ErrInvalidTicket
	}
	p := strings.Split(ticket, ".")
	switch {
	case len(p) == 4 && p[0] == ticketVersion:
		exp, ok := parseExp(p[2])
		if !ok || !s.check(domainTicket, p[1], p[3], sale, user, p[2]) || !now.Before(exp) {
			return -1, ErrInvalidTicket
		}
		return -1, nil
	case len(p) == 5 && p[0] == placedTicketVersion:
		exp, ok := parseExp(p[2])
		idx, okI := parseIndex(p[3])
		if !ok || !okI || !s.check(domainPlacedTicket, p[1], p[4], sale, user, p[2], p[3]) || !now.Before(exp) {
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

// A challenge is
//
//	c1.<kid>.<exp>.<difficulty>.<nonce>.<mac>
//
// mac over (sale, user, exp, difficulty, nonce) under the challenge domain: the difficulty is
// sealed, so a client cannot lower it; the nonce (128 random bits) is spent in Redis at entry.
const challengeVersion = "c1"

// ChallengeLife is how long a challenge may be solved and used.
const ChallengeLife = 60 * time.Second

// MaxDifficulty bounds the difficulty in bits (2^40 hashes is hours for a browser).
const MaxDifficulty = 40

// Challenge is a verified challenge.
type Challenge struct {
	Difficulty int
	Nonce      string
	Expires    time.Time
}

// NewChallenge seals a fresh challenge for (sale, user) expiring at exp.
func (s *Sealer) NewChallenge(sale, user string, difficulty int, exp time.Time) (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return s.sealChallenge(sale, user, difficulty, base64.RawURLEncoding.EncodeToString(raw[:]), exp), nil
}

// sealChallenge seals a challenge with the given nonce (NewChallenge draws it).
func (s *Sealer) sealChallenge(sale, user string, difficulty int, nonce string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 36)
	d := strconv.Itoa(difficulty)
	kid, sum := s.sign(domainChallenge, sale, user, e, d, nonce)
	return challengeVersion + "." + kid + "." + e + "." + d + "." + nonce + "." + sum
}

// VerifyChallenge checks a challenge and its solution presented by user for sale at now:
// the seal, the binding to (sale, user), the expiry, a difficulty of at least min, and that
// SHA-256("<challenge>:<solution>") has at least the sealed difficulty's leading zero bits.
// Single use is Redis's part (the nonce is spent by room_queue.lua).
func (s *Sealer) VerifyChallenge(challenge, solution, sale, user string, min int, now time.Time) (Challenge, error) {
	var c Challenge
	if len(challenge) > maxSealed || !contract.ValidID(sale) || !contract.ValidID(user) {
		return c, ErrInvalidChallenge
	}
	p := strings.Split(challenge, ".")
	if len(p) != 6 || p[0] != challengeVersion {
		return c, ErrInvalidChallenge
	}
	exp, ok := parseExp(p[2])
	d, okD := parseDifficulty(p[3])
	if !ok || !okD || !tokenformat.ValidNonce(p[4]) || !s.check(domainChallenge, p[1], p[5], sale, user, p[2], p[3], p[4]) {
		return c, ErrInvalidChallenge
	}
	if !now.Before(exp) || d < min {
		return c, ErrInvalidChallenge
	}
	if !ValidSolution(solution) || LeadingZeroBits(challenge, solution) < d {
		return c, ErrInvalidChallenge
	}
	return Challenge{Difficulty: d, Nonce: p[4], Expires: exp}, nil
}

// ValidSolution reports whether s is a counter as the contract writes it: a decimal integer
// of at most 20 digits without leading zeros, within uint64.
func ValidSolution(s string) bool {
	if len(s) == 0 || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// LeadingZeroBits counts the leading zero bits of SHA-256("<challenge>:<counter>").
func LeadingZeroBits(challenge, counter string) int {
	sum := sha256.Sum256([]byte(challenge + ":" + counter))
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Solve finds the smallest counter that meets difficulty (what a client does; tests and the
// bench use it).
func Solve(challenge string, difficulty int) string {
	for i := uint64(0); ; i++ {
		c := strconv.FormatUint(i, 10)
		if LeadingZeroBits(challenge, c) >= difficulty {
			return c
		}
	}
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

func parseDifficulty(s string) (int, bool) {
	if len(s) == 0 || len(s) > 2 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	d, err := strconv.Atoi(s)
	if err != nil || d < 0 || d > MaxDifficulty {
		return 0, false
	}
	return d, true
}
