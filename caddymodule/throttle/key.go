package throttle

import (
	"strings"

	"github.com/seckilledge/seckill/caddymodule/throttle/core"
)

// MaskIP returns the network of ip at the zone's prefix length (core.MaskIP).
func MaskIP(ip string, v4Prefix, v6Prefix int) string { return core.MaskIP(ip, v4Prefix, v6Prefix) }

// SafeKey returns key as it goes into a Redis key name (core.SafeKey): unchanged when short and
// plain, else a digest. The room's ban check names the same keys without importing this package.
func SafeKey(key string) string { return core.SafeKey(key) }

// The placeholders whose value is an IP address and therefore gets prefix bucketing. The
// Caddyfile shorthand {client_ip} becomes {http.vars.client_ip}, which honours the server's
// trusted_proxies; {remote_host} is the direct peer.
var ipPlaceholders = map[string]string{
	"{http.vars.client_ip}":      clientNetPlaceholder,
	"{client_ip}":                clientNetPlaceholder,
	"{http.request.remote.host}": peerNetPlaceholder,
	"{remote_host}":              peerNetPlaceholder,
}

const (
	clientNetPlaceholder = "{seckill.throttle.client_net}"
	peerNetPlaceholder   = "{seckill.throttle.peer_net}"
)

// rewriteTemplate replaces IP placeholders in a key template by the bucketed forms the
// handler fills in, and reports which ones it uses.
func rewriteTemplate(tpl string) (out string, usesClient, usesPeer bool) {
	out = tpl
	for from, to := range ipPlaceholders {
		out = strings.ReplaceAll(out, from, to)
	}
	return out, strings.Contains(out, clientNetPlaceholder), strings.Contains(out, peerNetPlaceholder)
}
