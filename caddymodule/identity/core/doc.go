// Package core is what seckill_identity, seckill_jwt and seckill_session decide, without
// Caddy: the Verifier of signed sessions and the Outcome of each request's credential, the
// keys (static, or a JWKS fetched and refreshed in the background) with their algorithm
// pinned, and the caches (verified sessions; the shop's answers about opaque sessions).
//
// The Caddy modules in the parent package configure these, pool the JWKS sources across
// reloads and answer the HTTP request; the tests here link no Caddy (layering_test.go).
package core
