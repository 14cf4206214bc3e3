// Package egress decides which addresses the backend may connect to on behalf of a URL someone
// else chose: a sale's webhook_url, the default SECKILL_WEBHOOK_URL. Those point at the shop on
// the public internet. Left unchecked, an admin token (or whoever steals one) could aim the
// delivery worker at the backend's own network: the cloud's metadata service, Redis or Postgres
// on loopback, the admin API itself, and read the outcome back as a port scan.
//
// The policy is one pure function, Check, applied twice: to the URL when it is configured
// (CheckURL, a clear early refusal), and to every address actually dialled (Control, a
// net.Dialer hook that runs after name resolution), so a name that resolves outside when it is
// accepted and inside later (DNS rebinding) is still refused.
//
// A Policy adds exceptions: an allow list of prefixes (SECKILL_WEBHOOK_ALLOW_CIDRS, e.g. the
// demo's receiver on 127.0.0.1/32). No allow list lifts the refusal of link-local addresses
// and the cloud metadata services: nothing a shop serves lives there, and they hand out the
// machine's credentials.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrBlocked is what every refusal of this package matches with errors.Is.
var ErrBlocked = errors.New("egress: address not allowed")

// BlockedError is a refused address and why.
type BlockedError struct {
	Addr netip.Addr
	// Kind names the range: "loopback", "private", "link-local", "metadata", ...
	Kind string
}

func (e *BlockedError) Error() string {
	if !e.Addr.IsValid() {
		return "egress: " + e.Kind + " address refused"
	}
	return "egress: " + e.Addr.String() + " is a " + e.Kind + " address"
}

// Is makes errors.Is(err, ErrBlocked) hold.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// metadata are the cloud metadata services, named on their own so a refusal says what it
// protected (both also lie in a refused range: link-local, unique-local).
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud (in CGNAT space)
}

// refused are the special-purpose ranges (RFC 6890 and successors) the standard library's
// predicates do not cover; none of them holds a shop on the public internet.
var refused = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},         // "this network"; Linux dials 0.x as loopback
	{netip.MustParsePrefix("100.64.0.0/10"), "shared"},          // CGNAT: a provider's inside, and Alibaba's metadata
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},         // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},    // TEST-NET-1
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},        // benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"}, // TEST-NET-2
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},  // TEST-NET-3
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},          // class E and the broadcast address
	{netip.MustParsePrefix("::/96"), "reserved"},                // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private"},        // local-use NAT64
	{netip.MustParsePrefix("100::/64"), "reserved"},             // discard-only
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fec0::/10"), "private"}, // site-local (deprecated)
}

// Prefixes whose addresses carry an IPv4 address that is what the packet finally reaches.
var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToF4 = netip.MustParsePrefix("2002::/16")
)

// Check returns nil for an address on the public internet, and a *BlockedError for one inside:
// loopback, private (RFC 1918, fc00::/7), shared (CGNAT 100.64/10), link-local (169.254/16,
// fe80::/10), a cloud metadata service, unspecified, multicast, or another special-purpose
// range. An IPv4 address written as IPv6 (::ffff:a.b.c.d, NAT64, 6to4) is judged by the IPv4
// address it reaches.
func Check(a netip.Addr) error {
	if !a.IsValid() {
		return &BlockedError{Kind: "invalid"}
	}
	return check(Reached(a))
}

// Reached is the address a packet to a finally reaches: an IPv4 address written as IPv6
// (::ffff:a.b.c.d, NAT64, 6to4) is that IPv4 address; a zone is dropped. Every check, and the
// match against an allow list, is made on it.
func Reached(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:16]))
	}
	if sixToF4.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return a
}

// check is Check of an address already Reached.
func check(a netip.Addr) error {
	kind := ""
	switch {
	case isMetadata(a):
		kind = "metadata"
	case a.IsUnspecified():
		kind = "unspecified"
	case a.IsLoopback():
		kind = "loopback"
	case a.IsLinkLocalUnicast():
		kind = "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		kind = "multicast"
	case a.IsPrivate():
		kind = "private"
	default:
		for _, r := range refused {
			if r.prefix.Contains(a) {
				kind = r.kind
				break
			}
		}
	}
	if kind == "" {
		return nil
	}
	return &BlockedError{Addr: a, Kind: kind}
}

func isMetadata(a netip.Addr) bool {
	for _, m := range metadata {
		if a == m {
			return true
		}
	}
	return false
}

// Allowed reports whether Check accepts a.
func Allowed(a netip.Addr) bool { return Check(a) == nil }

// Policy is Check with an allow list. The zero Policy is Check.
type Policy struct {
	// Allow lists prefixes accepted although Check refuses them (a receiver on loopback or the
	// private network), except link-local and metadata addresses, which are refused whatever
	// the list says. Matched against the address reached (Reached), so ::ffff:127.0.0.1 is
	// 127.0.0.1 for the list as for the checks.
	Allow []netip.Prefix
}

// neverAllowed are the kinds no allow list lifts.
func neverAllowed(kind string) bool { return kind == "metadata" || kind == "link-local" }

// Check returns nil for an address the policy accepts: one Check accepts, or one in Allow that
// is neither link-local nor a metadata service.
func (p Policy) Check(a netip.Addr) error {
	if !a.IsValid() {
		return &BlockedError{Kind: "invalid"}
	}
	a = Reached(a)
	err := check(a)
	var be *BlockedError
	if err == nil || !errors.As(err, &be) || neverAllowed(be.Kind) {
		return err
	}
	for _, pr := range p.Allow {
		if pr.Contains(a) {
			return nil
		}
	}
	return err
}

// Control is a net.Dialer ControlContext that refuses to connect to an address the policy
// refuses. The dialer calls it after resolving the name, with the address it is about to
// connect to, on every connection attempt: what is checked is what is dialled.
func (p Policy) Control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// The dialer always passes ip:port; anything else is not dialled blind.
		return &BlockedError{Kind: "unparsable"}
	}
	return p.Check(ap.Addr())
}

// Control is Policy{}.Control: Check at every dial.
func Control(ctx context.Context, network, address string, c syscall.RawConn) error {
	return Policy{}.Control(ctx, network, address, c)
}

// AllowInside is the allow list of the deprecated SECKILL_WEBHOOK_ALLOW_PRIVATE=1: every
// address, which still leaves link-local and metadata refused.
var AllowInside = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// ParseAllow reads an allow list: CIDR prefixes (127.0.0.1/32, 10.0.0.0/8, fd12::/64) or bare
// addresses (one address), separated by commas or spaces. A prefix written as IPv4-mapped
// IPv6 (::ffff:10.0.0.0/104) is its IPv4 form, as addresses are. A prefix with host bits set
// (10.0.0.1/8) is refused: it says something other than what it allows.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		var pr netip.Prefix
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("egress: allow %q: not a CIDR prefix", f)
			}
			if p != p.Masked() {
				return nil, fmt.Errorf("egress: allow %q: host bits set (did you mean %s?)", f, p.Masked())
			}
			pr = p
		} else {
			a, err := netip.ParseAddr(f)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("egress: allow %q: not an address (without zone) or CIDR prefix", f)
			}
			pr = netip.PrefixFrom(a, a.BitLen())
		}
		if a := pr.Addr(); a.Is4In6() {
			if pr.Bits() < 96 {
				return nil, fmt.Errorf("egress: allow %q: an IPv4-mapped prefix shorter than /96", f)
			}
			pr = netip.PrefixFrom(a.Unmap(), pr.Bits()-96)
		}
		out = append(out, pr)
	}
	return out, nil
}

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL refuses a URL whose host is, or resolves (through r; nil: net.DefaultResolver) to, an
// address Check refuses: one inside address among several is enough. A name that does not
// resolve now is accepted: this check is the early, clear refusal; Control, at every dial, is
// the one that holds.
func CheckURL(ctx context.Context, r Resolver, raw string) error {
	return Policy{}.CheckURL(ctx, r, raw)
}

// CheckURL is CheckURL with the policy's allow list.
func (p Policy) CheckURL(ctx context.Context, r Resolver, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		return p.Check(a)
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.Check(a); err != nil {
			return err
		}
	}
	return nil
}
