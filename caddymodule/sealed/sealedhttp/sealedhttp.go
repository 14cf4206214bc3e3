// Package sealedhttp is the gateway side of the sealed values (caddymodule/sealed) that the
// waiting room and the draw share: their signer made from the app's token keys, and the
// challenge endpoint with its options (life, bounds on open challenges), which both handlers
// embed, so the two issue challenges alike.
package sealedhttp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// Provision takes the seckill app for a handler that seals values (handler names it in
// errors) and makes its issuer: the signer of the app's token keys (token_keys, {env.*}
// placeholders replaced), used under the sealed values' own domains, and the app's Redis
// client for the issue step. No network I/O.
func Provision(ctx caddy.Context, handler string) (*caddymodule.App, sealed.Issuer, error) {
	appIface, err := ctx.App("seckill")
	if err != nil {
		return nil, sealed.Issuer{}, fmt.Errorf("%s: the seckill app: %w", handler, err)
	}
	app := appIface.(*caddymodule.App)
	repl := caddy.NewReplacer()
	var keys []sealed.Key
	for _, k := range app.TokenKeys {
		keys = append(keys, sealed.Key{ID: k.ID, Secret: []byte(repl.ReplaceAll(k.Secret, ""))})
	}
	s, err := sealed.NewSealer(keys...)
	if err != nil {
		return nil, sealed.Issuer{}, fmt.Errorf("%s: %w", handler, err)
	}
	return app, sealed.Issuer{Sealer: s, Client: app.RedisClient()}, nil
}

// Challenges are the options of a handler's proof-of-work challenges, inline in its JSON and
// its Caddyfile block (docs/room.md, "Proof of work"). What stops a stockpile of challenges:
// their short life, these bounds, counted in Redis across every gateway, and the difficulty in
// force when each is issued. A challenge solved within its life is accepted at the difficulty
// it was issued with.
type Challenges struct {
	// How long a challenge may be solved and used: an entry after its expires_at is refused
	// 403 challenge_expired. Short, so that challenges fetched before a rush expire before it;
	// long enough for the slowest device at the highest difficulty (2^max attempts; see
	// docs/room.md for what a difficulty costs). Default 30s; 1s to 10m.
	ChallengeLife caddy.Duration `json:"challenge_life,omitempty"`
	// The most challenges one user may hold open (issued and not yet expired) in a sale; one
	// more is 429 too_many_challenges with Retry-After. Default 3; -1: no bound.
	ChallengesPerUser int `json:"challenges_per_user,omitempty"`
	// How many challenges one client network (challenge_prefix of the client's address, as
	// Caddy resolves it: trusted_proxies honoured) may hold open in a sale at the difficulty in
	// force; beyond, each doubling of its open challenges adds a bit to its next one, up to the
	// highest difficulty (sealed.NetBits). Never a refusal: a carrier's NAT is no wall.
	// Default 500; -1: no rise.
	ChallengesPerNet int `json:"challenges_per_net,omitempty"`
	// The prefix lengths of a client network, [IPv4, IPv6]. Default [24, 48].
	ChallengePrefix []int `json:"challenge_prefix,omitempty"`
}

// SetDefaults fills in the zero values.
func (c *Challenges) SetDefaults() {
	if c.ChallengeLife == 0 {
		c.ChallengeLife = caddy.Duration(sealed.DefaultChallengeLife)
	}
	if c.ChallengesPerUser == 0 {
		c.ChallengesPerUser = sealed.DefaultPerUser
	}
	if c.ChallengesPerNet == 0 {
		c.ChallengesPerNet = sealed.DefaultPerNet
	}
	if len(c.ChallengePrefix) == 0 {
		c.ChallengePrefix = []int{sealed.DefaultIPv4, sealed.DefaultIPv6}
	}
}

// Validate checks the options (after SetDefaults); handler names the handler in the error.
func (c *Challenges) Validate(handler string) error {
	switch {
	case time.Duration(c.ChallengeLife) < time.Second || time.Duration(c.ChallengeLife) > 10*time.Minute:
		return fmt.Errorf("%s: challenge_life must be between 1s and 10m", handler)
	case c.ChallengesPerUser < -1 || c.ChallengesPerNet < -1:
		return fmt.Errorf("%s: challenges_per_user and challenges_per_net are at least 1 (-1: none)", handler)
	case len(c.ChallengePrefix) != 2 || c.ChallengePrefix[0] < 8 || c.ChallengePrefix[0] > 32 ||
		c.ChallengePrefix[1] < 16 || c.ChallengePrefix[1] > 128:
		return fmt.Errorf("%s: challenge_prefix is [IPv4 8-32, IPv6 16-128]", handler)
	}
	return nil
}

// Bounds are the options as the issue step takes them.
func (c *Challenges) Bounds() sealed.Bounds {
	bound := func(n int) int { return max(n, 0) } // -1: no bound, which the script writes 0
	return sealed.Bounds{Life: time.Duration(c.ChallengeLife), PerUser: bound(c.ChallengesPerUser), PerNet: bound(c.ChallengesPerNet)}
}

// UnmarshalOption parses the Caddyfile option at d when it is one of the challenges' options
// (challenge_life <duration>, challenges_per_user <n>, challenges_per_net <n>,
// challenge_prefix <ipv4> <ipv6>); ok is false for any other. Pass the Challenges to
// handler.Limits.UnmarshalBlock to have it tried on every option.
func (c *Challenges) UnmarshalOption(d *caddyfile.Dispenser) (ok bool, err error) {
	switch d.Val() {
	case "challenge_life":
		return true, handler.DurationArg(d, &c.ChallengeLife)
	case "challenges_per_user":
		return true, handler.IntArg(d, &c.ChallengesPerUser)
	case "challenges_per_net":
		return true, handler.IntArg(d, &c.ChallengesPerNet)
	case "challenge_prefix":
		args := d.RemainingArgs()
		if len(args) != 2 {
			return true, d.Errf("challenge_prefix takes <ipv4 bits> <ipv6 bits>")
		}
		c.ChallengePrefix = make([]int, 2)
		for i, a := range args {
			n, err := strconv.Atoi(a)
			if err != nil {
				return true, d.Errf("challenge_prefix: %q is not an integer", a)
			}
			c.ChallengePrefix[i] = n
		}
		return true, nil
	}
	return false, nil
}

// Issue is the challenge endpoint's work once the handler knows the sale, the difficulty in
// force and the highest one (ceiling): the issue step in Redis (bounded by caller), for the
// user and the request's client network, whose open challenges raise the difficulty up to
// ceiling. ref.Status is 0 when a is issued; err means Redis did not answer (503).
func (c *Challenges) Issue(ctx context.Context, caller edge.Caller, is sealed.Issuer, r *http.Request, sale, user string, difficulty, ceiling int) (sealed.ChallengeAnswer, handler.Refusal, error) {
	net := sealed.Network(clientIP(r), c.ChallengePrefix[0], c.ChallengePrefix[1])
	type issued struct {
		a   sealed.ChallengeAnswer
		ref handler.Refusal
	}
	v, err := edge.Call(ctx, caller, func(ctx context.Context) (issued, error) {
		a, ref, err := is.Issue(ctx, sale, user, net, difficulty, ceiling, c.Bounds())
		return issued{a, ref}, err
	})
	return v.a, v.ref, err
}

// clientIP is the client's address as Caddy resolved it (trusted_proxies honoured), else the
// direct peer's.
func clientIP(r *http.Request) string {
	if ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Interface guard
var _ handler.OptionParser = (*Challenges)(nil)
