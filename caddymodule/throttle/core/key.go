package core

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
)

// MaxPlainKey is the longest client key stored as is. Longer keys (and keys with bytes that
// could confuse a hash tag or a log line) are stored as a digest: a header value is attacker
// input, and Redis memory per key must not depend on it.
const MaxPlainKey = 64

// SafeKey returns key as it goes into a Redis key name: unchanged when short and made of
// [A-Za-z0-9._:/@-], else "h:" and 32 hex digits of its SHA-256. Never "{" or "}", which
// would change the Cluster hash tag.
func SafeKey(key string) string {
	if len(key) <= MaxPlainKey && plain(key) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "h:" + hex.EncodeToString(sum[:16])
}

func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == ':', c == '/', c == '@', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// MaskIP returns the network of ip at the zone's prefix length ("203.0.113.0/24",
// "2001:db8:1:2::/64"), or ip itself at a full-length prefix. IPv4-mapped IPv6 addresses
// count as IPv4. A value that is not an IP address is returned unchanged, so a zone keyed on
// an IP never errors; the key is then whatever the placeholder held.
func MaskIP(ip string, v4Prefix, v6Prefix int) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	addr = addr.Unmap().WithZone("")
	bits := v6Prefix
	if addr.Is4() {
		bits = v4Prefix
	}
	if bits <= 0 || bits >= addr.BitLen() {
		return addr.String()
	}
	p, err := addr.Prefix(bits)
	if err != nil {
		return addr.String()
	}
	return p.String()
}
