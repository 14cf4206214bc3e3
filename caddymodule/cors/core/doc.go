// Package core is the Caddy-free part of the `seckill_cors` handler: the allow list of the
// origins whose pages may call the edge with the buyer's credentials, and what an origin is.
// Its tests link no Caddy; the handler's own (the preflight, the headers, the cross-site rule
// kept for every other origin, the Caddyfile) are in internal/conformance.
package core
