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

// What stops a stockpile of challenges, since a live challenge is accepted at
// the difficulty it was sealed with: its short life (Bounds.Life), the difficulty in force
// when it is issued, and a bound on the challenges a user may hold open at once, counted in
// Redis by the issue step (lua/challenge_issue.lua), so exactly across every gateway. A
// network (an address prefix) is never refused: a carrier's NAT, an office or a campus puts
// thousands of honest people behind one address. Its open challenges are counted instead, and
// a crowded network pays in work: each doubling of its open challenges beyond PerNet adds one
// bit to its next challenge (NetBits), up to the room's highest difficulty.

// Defaults of the bounds (the room's and the draw's challenges_per_user, challenges_per_net,
// challenge_ipv4_prefix, challenge_ipv6_prefix).
const (
	// DefaultPerUser: an honest page holds one challenge at a time; a few more cover a reload
	// or a second tab.
	DefaultPerUser = 3
	// DefaultPerNet: how many challenges one network may hold open at the difficulty in
	// force; beyond, its challenges get harder (NetBits), never refused.
	DefaultPerNet = 500
	DefaultIPv4   = 24
	DefaultIPv6   = 48
)

// Bounds are a sale's limits on open challenges.
type Bounds struct {
	// Life of a challenge (> 0). Its expiry is Redis's clock plus Life, rounded down to the
	// second.
	Life time.Duration
	// PerUser is the most challenges open at once per user; 0: no bound. PerNet is how many
	// a network holds open before its challenges get harder (NetBits); 0: no rise.
	PerUser, PerNet int
}

// NetBits is how many bits a network's next challenge adds to the difficulty in force when
// the network holds open challenges open already: none below free, then one per doubling
// (free to 2 x free: 1, to 4 x free: 2, ...). A farm behind one address pays for every
// account it adds; a NAT of honest people pays a few bits, never a refusal.
func NetBits(open, free int) int {
	if free <= 0 || open < free {
		return 0
	}
	bits := 1
	for q := open / free; q > 1; q >>= 1 {
		bits++
	}
	return bits
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

// TooManyChallenges refuses a challenge beyond the user's bound; RetryAfter is set to when his
// oldest open one expires.
var TooManyChallenges = hcore.Refusal{Status: http.StatusTooManyRequests, Code: contract.CodeTooManyChallenges,
	Message: "too many open challenges for this user; solve the one you have, or wait for it to expire"}

// Issue seals a challenge for (sale, user), counted among the open challenges of user and of
// net (a client network, Network's; "" for none), at difficulty raised by NetBits of the
// network's open challenges, never above ceiling (the room's highest difficulty; below
// difficulty: difficulty). ref.Status is 0 when it is issued; else ref is the refusal to
// answer (TooManyChallenges with its Retry-After). An error means Redis did not answer:
// refuse with 503, never issue unbounded.
func (i Issuer) Issue(ctx context.Context, sale, user, net string, difficulty, ceiling int, b Bounds) (a ChallengeAnswer, ref hcore.Refusal, err error) {
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
	if len(res) > 2 && difficulty > 0 {
		open, _ := res[2].(int64)
		difficulty = min(difficulty+NetBits(int(open), perNet), max(ceiling, difficulty))
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
