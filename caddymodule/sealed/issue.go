package sealed

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"

	hcore "github.com/seckilledge/seckill/caddymodule/handler/core"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// What stops a stockpile of challenges (issue 35), now that a live challenge is accepted at
// the difficulty it was sealed with: its short life (Bounds.Life), the difficulty in force
// when it is issued, and a bound on the challenges a user, and a network, may hold open at
// once, counted in Redis by the issue step (lua/challenge_issue.lua), so exactly across every
// gateway.

// Defaults of the bounds (the room's and the draw's challenges_per_user, challenges_per_net,
// challenge_ipv4_prefix, challenge_ipv6_prefix).
const (
	// DefaultPerUser: an honest page holds one challenge at a time; a few more cover a reload
	// or a second tab.
	DefaultPerUser = 3
	// DefaultPerNet: a carrier's NAT puts many people behind one address, so the bound per
	// network is wide; it still caps what one machine or one /24 can stock to this many
	// challenges per challenge life.
	DefaultPerNet = 500
	DefaultIPv4   = 24
	DefaultIPv6   = 48
)

// Bounds are a sale's limits on open challenges.
type Bounds struct {
	// Life of a challenge (> 0). Its expiry is Redis's clock plus Life, rounded down to the
	// second.
	Life time.Duration
	// The most challenges open at once per user and per network; 0: no bound.
	PerUser, PerNet int
}

// Issuer issues challenges: the seal and the issue step in Redis.
type Issuer struct {
	Sealer *Sealer
	Client redis.Scripter
}

// ChallengeAnswer is the body of GET /seckill/{sale}/challenge (and of the draw's
// /draw/challenge).
type ChallengeAnswer struct {
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
	ExpiresAt  string `json:"expires_at"`
}

// TooManyChallenges refuses a challenge beyond a bound; RetryAfter is set to when the oldest
// open one expires.
var TooManyChallenges = hcore.Refusal{Status: http.StatusTooManyRequests, Code: contract.CodeTooManyChallenges,
	Message: "too many open challenges for this user or network; solve the one you have, or wait for it to expire"}

// Issue seals a challenge of difficulty for (sale, user), counted among the open challenges
// of user and of net (a client network, Network's; "" for none). ref.Status is 0 when it is
// issued; else ref is the refusal to answer (TooManyChallenges with its Retry-After). An
// error means Redis did not answer: refuse with 503, never issue unbounded.
func (i Issuer) Issue(ctx context.Context, sale, user, net string, difficulty int, b Bounds) (a ChallengeAnswer, ref hcore.Refusal, err error) {
	nonce, err := tokenformat.NewNonce()
	if err != nil {
		return a, ref, err
	}
	perNet := b.PerNet
	if net == "" {
		perNet = 0
	}
	res, err := lua.ChallengeIssue.Run(ctx, i.Client, []string{contract.ChallengesUserKey(sale, user), contract.ChallengesNetKey(sale, net)},
		nonce, b.Life.Milliseconds(), b.PerUser, perNet).Slice()
	if err != nil {
		return a, ref, err
	}
	if len(res) < 2 {
		return a, ref, fmt.Errorf("challenge_issue: %d values", len(res))
	}
	ok, _ := res[0].(int64)
	ms, _ := res[1].(int64)
	if ok != 1 {
		ref = TooManyChallenges
		ref.RetryAfter = time.Duration(ms) * time.Millisecond
		return a, ref, nil
	}
	exp := time.Unix(ms/1000, 0)
	return ChallengeAnswer{Challenge: i.Sealer.SealChallenge(sale, user, difficulty, nonce, exp), Difficulty: difficulty,
		ExpiresAt: exp.UTC().Format(time.RFC3339)}, ref, nil
}

// Network is the client network an address belongs to: its prefix of v4 bits (IPv4, and
// IPv4-mapped IPv6) or v6 bits ("203.0.113.0/24", "2001:db8:1::/48"); "" when ip is not an
// address (then only the user's bound applies).
func Network(ip string, v4, v6 int) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	a = a.Unmap().WithZone("")
	n := v6
	if a.Is4() {
		n = v4
	}
	p, err := a.Prefix(n)
	if err != nil {
		return ""
	}
	return p.String()
}
