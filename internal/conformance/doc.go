// Package conformance holds the tests of the Caddy-facing contract that span the handlers: the
// shipped Caddyfiles and the Caddyfiles of the benchmarks, adapted with every seckill module
// registered, and the Caddyfile golden files that name several handlers. It is one test binary
// that links every module, so a handler's own test binary links that handler alone and a
// change to one handler relinks its binary and this one, not every handler's. It has no code
// of its own.
package conformance
