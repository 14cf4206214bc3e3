// Package shop is a small sample shop: what a real shop does around the flash-sale edge, in the
// few hundred lines a reader can check, and what `make run` puts behind the gateway's :8088
// site (cmd/seckill-shop is its main).
//
// It does four things a shop does in front of seckill (DESIGN.md, "Shop hand-over"):
//
//   - Sessions. POST /signin sets the cookie seckill_session (__Host-seckill_session when the
//     public URL is https: Secure, Path=/, no Domain): a JWT signed with ES256 (iss: the
//     shop's public URL, aud: seckill, sub: the user, 1 hour). GET /.well-known/jwks.json
//     publishes the public key, so the gateway's seckill_identity checks a session locally,
//     without asking the shop per request. DEMO: the sign-in takes any user name and no
//     password (it starts only with -demo, which says so); a real shop checks credentials there.
//   - Pages. GET / shows the sign-in form, then the sales (links to the gateway's waiting page
//     and a buy button that asks the gateway for a token and buys with it, same origin), and
//     the user's orders as the webhooks told them, with a pay button for created ones.
//   - Webhooks. POST /webhooks checks the backend's Seckill-Signature with
//     contract.VerifyWebhook before it believes a byte, dedupes by event id, and keeps the
//     last events in memory; GET /webhooks lists them (JSON) with whether each one verified,
//     to the holder of the shop token only (they name buyers).
//   - Payment. POST /account/orders/{id}/pay (the signed-in owner only) confirms the payment
//     to the backend: POST /shop/orders/{id}/paid on its admin listener with a token of role
//     shop. The buyer never talks to that API.
//
// The signing key: a real shop keeps it (a file or a secret store) and publishes the old and
// the new key during a rotation; this one loads it from -key-file when the file exists, writes
// a new one there when it does not, and without -key-file makes one in memory at every start
// (every session ends with the process). Nothing is kept but the key: orders and events live
// in memory.
//
// It lives under examples/ rather than internal/: a shop written in Go may copy from it.
package shop
