// Package clientjs holds the JavaScript client, clients/js/seckill.js, for the gateway to
// serve: the waiting page and the draw page inline these very bytes (one source of truth,
// no second copy to drift), and its tests run it with Node against the real gateway.
package clientjs

import _ "embed"

// Source is seckill.js as published to npm, byte for byte.
//
//go:embed seckill.js
var Source string
