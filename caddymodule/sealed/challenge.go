package sealed

import (
	"crypto/sha256"
	"errors"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"

	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
)

// Request headers of the buyer protocol.
const (
	HeaderChallenge = "X-Seckill-Challenge"
	HeaderSolution  = "X-Seckill-Solution"
	HeaderTicket    = "X-Seckill-Ticket"
)

// Errors of a challenge. A client learns "invalid" or "expired", nothing finer: expired is
// told apart only for a challenge whose seal, sale and user are right, so it says nothing an
// attacker can use, and it tells an honest client that it was slow, not wrong.
var (
	ErrInvalidChallenge = errors.New("invalid challenge")
	ErrChallengeExpired = errors.New("challenge expired")
)

// The refusals of a proof of work, as the room and the draw answer them.
var (
	BadProof = hcore.Refusal{Status: http.StatusForbidden, Code: contract.CodeInvalidChallenge,
		Message: "the proof of work is missing, wrong, replayed, foreign or below the minimum difficulty; get a new challenge"}
	ExpiredProof = hcore.Refusal{Status: http.StatusForbidden, Code: contract.CodeChallengeExpired,
		Message: "the challenge expired before it was used (it lives until its expires_at); get a new challenge"}
)

// RefusalOf is the refusal of a VerifyChallenge error.
func RefusalOf(err error) hcore.Refusal {
	if errors.Is(err, ErrChallengeExpired) {
		return ExpiredProof
	}
	return BadProof
}

// A challenge is
//
//	c1.<kid>.<exp>.<difficulty>.<nonce>.<mac>
//
// mac over (sale, user, exp, difficulty, nonce) under the challenge domain: the difficulty is
// sealed, so a client cannot lower it; the nonce (128 random bits) is spent in Redis at entry.
// exp is in unix seconds (base 36), rounded down: a challenge never lives longer than its
// life.
const challengeVersion = "c1"

// DefaultChallengeLife is how long a challenge may be solved and used, by default (the room's
// and the draw's challenge_life). Short, so a stock of challenges fetched before a rush
// expires before it helps; long enough for a slow phone at the usual difficulties
// (docs/room.md, "What a difficulty costs").
const DefaultChallengeLife = 30 * time.Second

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
	nonce, err := tokenformat.NewNonce() // 128 random bits, as a purchase token's
	if err != nil {
		return "", err
	}
	return s.SealChallenge(sale, user, difficulty, nonce, exp), nil
}

// SealChallenge seals a challenge with the given nonce (NewChallenge draws it; the issue step
// draws it first, to count it among the open challenges before sealing).
func (s *Sealer) SealChallenge(sale, user string, difficulty int, nonce string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 36)
	d := strconv.Itoa(difficulty)
	kid, sum := s.sign(domainChallenge, sale, user, e, d, nonce)
	return challengeVersion + "." + kid + "." + e + "." + d + "." + nonce + "." + sum
}

// VerifyChallenge checks a challenge and its solution presented by user for sale at now:
// the seal, the binding to (sale, user), the expiry (ErrChallengeExpired), a difficulty of at
// least min, and that SHA-256("<challenge>:<solution>") has at least the sealed difficulty's
// leading zero bits. The sealed difficulty is the one asked when the challenge was issued,
// and it is enough for as long as the challenge lives, whatever the rate did since (work
// done honestly is never thrown away). Single use is Redis's part (the nonce is spent by
// the entry's script).
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
	if d < min || !ValidSolution(solution) || LeadingZeroBits(challenge, solution) < d {
		return c, ErrInvalidChallenge
	}
	if !now.Before(exp) {
		return c, ErrChallengeExpired
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
// bench use it). It takes 2^difficulty attempts on average.
func Solve(challenge string, difficulty int) string {
	for i := uint64(0); ; i++ {
		c := strconv.FormatUint(i, 10)
		if LeadingZeroBits(challenge, c) >= difficulty {
			return c
		}
	}
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
