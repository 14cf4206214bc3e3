package throttle

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/internal/placeholder"
	"github.com/seckilledge/seckill/caddymodule/throttle/core"
)

// Zone is one rate limit.
type Zone struct {
	// Name of the zone: 1 to 32 characters of [A-Za-z0-9_-]. It is part of the Redis key
	// (seckill:rl:{<zone>:<key>}) and the metrics' zone label.
	Name string `json:"name,omitempty"`

	// The client key, from placeholders: {http.vars.client_ip} (Caddyfile: {client_ip}; it
	// honours the server's trusted_proxies), a device header such as
	// {http.request.header.X-Device-ID}, the user id {http.auth.user.id} or
	// {http.request.header.X-User-ID}, or any combination. A request whose key is empty is
	// not counted in this zone (so pair a device or user zone with an IP zone).
	Key string `json:"key,omitempty"`

	// Only requests matching one of these matcher sets are counted in this zone. Default:
	// every request that reaches the handler.
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`

	// Length of the sliding window. Required.
	Window caddy.Duration `json:"window,omitempty"`

	// Requests admitted per key in any interval of length `window`, across every instance.
	// Required, >= 1.
	Limit int `json:"limit,omitempty"`

	// Prefix length IPv4 client addresses are bucketed to in the key. Default 32 (one
	// address).
	IPv4Prefix int `json:"ipv4_prefix,omitempty"`

	// Prefix length IPv6 client addresses are bucketed to in the key. Default 64 (one
	// subnet: a single host usually owns a whole /64).
	IPv6Prefix int `json:"ipv6_prefix,omitempty"`

	// Per-instance flood shield: at most this many requests per key per window are in flight
	// to or admitted by Redis from one instance. Default: limit (it then never refuses what
	// the exact tier would admit). -1 disables the shield.
	LocalLimit int `json:"local_limit,omitempty"`

	// Escalation of repeated violations to a ban.
	Ban *Ban `json:"ban,omitempty"`

	// Count and report (metrics, log), never refuse.
	Shadow bool `json:"shadow,omitempty"`

	// What to do when Redis cannot answer within the handler's timeout: "fail_open"
	// (default: admit, counted as outcome failed_open; the flood shield still holds each key
	// to local_limit per window on each instance) or "fail_closed" (503 `unavailable` with
	// Retry-After).
	OnFailure string `json:"on_failure,omitempty"`

	template   string
	value      placeholder.Value // the template read directly (a header, a variable), if it is one placeholder (not an IP)
	single     bool
	usesClient bool
	usesPeer   bool
	matchers   caddyhttp.MatcherSets
	matchJSON  string // the matchers as configured ("" for none)
}

// Ban escalates a key that keeps exceeding its zone to a ban, stored in Redis (so every
// instance enforces it) and answered locally while it lasts.
type Ban struct {
	// Over-limit episodes that trigger the ban. One episode is a run of refusals until a slot
	// frees, however many requests it refused. Required, >= 1.
	After int `json:"after,omitempty"`

	// Strikes are forgotten this long after the first one. Default 10m.
	Within caddy.Duration `json:"within,omitempty"`

	// How long the ban lasts. Default 15m.
	For caddy.Duration `json:"for,omitempty"`
}

// Allow lists requests that are never throttled: internal health checks, known partners.
type Allow struct {
	// Client IP ranges (CIDR or single addresses), checked against the client IP as Caddy
	// resolved it (trusted_proxies honoured).
	CIDRs []string `json:"cidrs,omitempty"`

	// Matcher sets; a request matching any of them bypasses throttling.
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`
}

type allowList struct {
	prefixes []netip.Prefix
	matchers caddyhttp.MatcherSets
}

func (z *Zone) provision(ctx caddy.Context) error {
	if z.IPv4Prefix == 0 {
		z.IPv4Prefix = 32
	}
	if z.IPv6Prefix == 0 {
		z.IPv6Prefix = 64
	}
	if z.OnFailure == "" {
		z.OnFailure = "fail_open"
	}
	if z.Ban != nil {
		if z.Ban.Within == 0 {
			z.Ban.Within = caddy.Duration(10 * time.Minute)
		}
		if z.Ban.For == 0 {
			z.Ban.For = caddy.Duration(15 * time.Minute)
		}
	}
	z.template, z.usesClient, z.usesPeer = rewriteTemplate(z.Key)
	if !z.usesClient && !z.usesPeer {
		z.value = placeholder.Compile(z.template)
		z.single = true
	}
	if z.MatcherSetsRaw != nil {
		// Kept to find the zones that share their matchers (LoadModule clears the raw field).
		raw, _ := json.Marshal(z.MatcherSetsRaw)
		z.matchJSON = string(raw)
		mod, err := ctx.LoadModule(z, "MatcherSetsRaw")
		if err != nil {
			return fmt.Errorf("seckill_throttle: zone %s: loading matchers: %w", z.Name, err)
		}
		if err := z.matchers.FromInterface(mod); err != nil {
			return err
		}
	}
	return nil
}

func (z *Zone) rule() core.Rule {
	r := core.Rule{Name: z.Name, Limit: z.Limit, Window: time.Duration(z.Window), LocalLimit: z.LocalLimit,
		Shadow: z.Shadow, FailClosed: z.OnFailure == "fail_closed"}
	if z.Ban != nil {
		r.Ban = core.BanRule{Strikes: z.Ban.After, Within: time.Duration(z.Ban.Within), Duration: time.Duration(z.Ban.For)}
	}
	return r
}

// matches reports whether zone z applies to r by its matchers.
func (z *Zone) matches(r *http.Request) bool {
	if len(z.matchers) == 0 {
		return true
	}
	ok, err := z.matchers.AnyMatchWithError(r)
	return err == nil && ok
}

// key is the request's key in zone z, "" when it is empty (the zone then does not apply).
// A key without IP placeholders is read as provisioned (placeholder.Value: a header or the
// authenticated user directly), an IP key from the client's address, anything else through
// the replacer.
func (z *Zone) key(r *http.Request, repl *caddy.Replacer) string {
	var k string
	switch {
	case z.template == clientNetPlaceholder:
		k = MaskIP(clientIP(r), z.IPv4Prefix, z.IPv6Prefix)
	case z.template == peerNetPlaceholder:
		k = MaskIP(peerHost(r), z.IPv4Prefix, z.IPv6Prefix)
	case z.single:
		k = z.value.Get(r, repl)
	default:
		if z.usesClient {
			repl.Set(clientNetPlaceholder[1:len(clientNetPlaceholder)-1], MaskIP(clientIP(r), z.IPv4Prefix, z.IPv6Prefix))
		}
		if z.usesPeer {
			repl.Set(peerNetPlaceholder[1:len(peerNetPlaceholder)-1], MaskIP(peerHost(r), z.IPv4Prefix, z.IPv6Prefix))
		}
		k = repl.ReplaceAll(z.template, "")
	}
	if k == "" {
		return ""
	}
	return SafeKey(k)
}

// clientIP is the client's IP as Caddy resolved it (trusted_proxies honoured), else the peer.
func clientIP(r *http.Request) string {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	if ip == "" {
		ip = peerHost(r)
	}
	return ip
}

func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (h *Handler) allowed(r *http.Request) bool {
	if h.allow == nil {
		return false
	}
	if len(h.allow.prefixes) > 0 {
		if addr, err := netip.ParseAddr(clientIP(r)); err == nil {
			addr = addr.Unmap().WithZone("")
			for _, p := range h.allow.prefixes {
				if p.Contains(addr) {
					return true
				}
			}
		}
	}
	if len(h.allow.matchers) > 0 {
		ok, err := h.allow.matchers.AnyMatchWithError(r)
		return err == nil && ok
	}
	return false
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
