// Package bench drives a real flash sale through the real stack and checks it afterwards: the
// crowd (scenarios), the contestants (the full edge, the database baselines, the ceiling), the
// private stack it can start, and the result that the report renders. The seckill-bench
// command is a thin layer of flags over it, and the end-to-end test of `make test` uses it too.
package crowd

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
)

// Crowd describes who shows up at the sale.
type Crowd struct {
	// Users is the number of distinct people who each get a token and buy.
	Users int
	// Repeaters is the share of users (0..1) who click 2 to 5 times.
	Repeaters float64
	// Bots is the number of scripted users hammering the buy endpoint; BotHits is how many
	// requests each sends.
	Bots, BotHits int
	// Replays is the number of requests that present another user's token; Forged the number
	// that present a made-up one.
	Replays, Forged int
	// Late is the number of users who arrive after the rush (expected: sold_out).
	Late int
	// Seed makes the crowd reproducible.
	Seed uint64
}

// DefaultCrowd is the crowd of `make bench`: big enough to show the shape, small enough to run
// four contestants in about a minute on two cores.
func DefaultCrowd() Crowd {
	return Crowd{Users: 20000, Repeaters: 0.2, Bots: 20, BotHits: 200, Replays: 500, Forged: 500, Late: 200, Seed: 1}
}

// Kinds of requests in the rush.
const (
	KindCrowd  = "crowd"  // a user's first click
	KindRepeat = "repeat" // the same user clicking again (same token)
	KindBot    = "bot"    // a script hammering
	KindReplay = "replay" // another user's token
	KindForged = "forged" // a made-up token
	KindLate   = "late"   // after the sale sold out
)

// Click is one purchase attempt of the rush, independent of the contestant it is sent to.
type Click struct {
	User string
	Kind string
	// TokenOf is whose token the click presents (its own, or a victim's for a replay); "" for
	// a forged token.
	TokenOf string
	// IP is the client address the click claims (X-Forwarded-For), so that per-IP limits see
	// people, not the one loopback address of the load generator.
	IP string
}

// People is the cast of one run: the crowd's users, the bots, the late arrivals.
type People struct {
	Prefix string // unique per run, so runs never share user ids
	Users  []string
	Bots   []string
	Late   []string
	IPs    map[string]string
}

// Cast names everyone in the crowd; prefix keeps runs apart.
func (c Crowd) Cast(prefix string) People {
	p := People{Prefix: prefix, IPs: map[string]string{}}
	// One /24 per user for the first 65 536 users: per-IP limits bucket IPv4 by prefix, and a
	// crowd is people on many networks, not one subnet.
	ip := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i&255, (i>>8)&255, 1+(i>>16)&127) }
	n := 0
	for i := 0; i < c.Users; i++ {
		u := fmt.Sprintf("%su%d", prefix, i)
		p.Users = append(p.Users, u)
		p.IPs[u] = ip(n)
		n++
	}
	for i := 0; i < c.Bots; i++ {
		u := fmt.Sprintf("%sb%d", prefix, i)
		p.Bots = append(p.Bots, u)
		p.IPs[u] = fmt.Sprintf("172.16.0.%d", i%250+1) // a few IPs, as a small botnet has
	}
	for i := 0; i < c.Late; i++ {
		u := fmt.Sprintf("%sl%d", prefix, i)
		p.Late = append(p.Late, u)
		p.IPs[u] = ip(n)
		n++
	}
	return p
}

// Rush is the shuffled list of clicks of the crowd, the bots, the replays and the forgeries
// (late arrivals come after it, separately).
func (c Crowd) Rush(p People) []Click {
	r := rand.New(rand.NewPCG(c.Seed, 0x5ec0111))
	var clicks []Click
	for _, u := range p.Users {
		clicks = append(clicks, Click{User: u, Kind: KindCrowd, TokenOf: u, IP: p.IPs[u]})
		if r.Float64() < c.Repeaters {
			for k := 1 + r.IntN(4); k > 0; k-- {
				clicks = append(clicks, Click{User: u, Kind: KindRepeat, TokenOf: u, IP: p.IPs[u]})
			}
		}
	}
	for _, b := range p.Bots {
		for k := 0; k < c.BotHits; k++ {
			clicks = append(clicks, Click{User: b, Kind: KindBot, TokenOf: b, IP: p.IPs[b]})
		}
	}
	if len(p.Users) >= 2 {
		for k := 0; k < c.Replays; k++ {
			i, j := r.IntN(len(p.Users)), r.IntN(len(p.Users)-1)
			if j >= i {
				j++
			}
			clicks = append(clicks, Click{User: p.Users[i], Kind: KindReplay, TokenOf: p.Users[j], IP: p.IPs[p.Users[i]]})
		}
	}
	for k := 0; k < c.Forged && len(p.Users) > 0; k++ {
		u := p.Users[r.IntN(len(p.Users))]
		clicks = append(clicks, Click{User: u, Kind: KindForged, IP: p.IPs[u]})
	}
	r.Shuffle(len(clicks), func(i, j int) { clicks[i], clicks[j] = clicks[j], clicks[i] })
	return clicks
}

// forgedToken looks like a token (version, key id, expiry, nonce, mac) but was never issued.
func forgedToken(i int) string {
	mac := make([]byte, 32)
	for k := range mac {
		mac[k] = byte(i*31 + k)
	}
	return fmt.Sprintf("1.k1.zzzzzz.%s.%s", base64.RawURLEncoding.EncodeToString(mac[:16]), base64.RawURLEncoding.EncodeToString(mac))
}
