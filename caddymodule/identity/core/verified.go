package core

import (
	"crypto/sha256"
	"time"
	"unsafe"

	"github.com/go-jose/go-jose/v4/jwt"
)

// DefaultVerifiedCache is the default bound of seckill_identity's cache of verified sessions.
// An entry takes about 220 bytes (more by its lane claims, with lane_claim): 100 000
// sessions, about 22 MB.
const DefaultVerifiedCache = 100_000

// verifiedSession is what one successful verification proved about a token: who it names
// (with its lane claims, when the verifier reads them), the window in which it is accepted,
// and the key that verified it. Nothing else is kept: the cache is keyed by the token's
// SHA-256, and neither the key nor the value can be presented as a session.
type verifiedSession struct {
	user string
	// lanes is the session's lane claims (Verifier.LaneClaim), "" without.
	lanes string
	// key is the key the signature verified with. A hit needs the key the token's kid names
	// now to be this very *Key: a JWKS refresh keeps the *Key of an unchanged key (same kid,
	// alg and material, see keepUnchanged), so only a key dropped or replaced under its kid
	// ends the entry.
	key *Key
	// The token's exp, nbf and iat (NumericDate, Unix seconds); the leeway is applied on each
	// use, as a fresh verification does.
	exp, nbf, iat  int64
	hasNBF, hasIAT bool
}

// sessionOf is what claims, verified with key, prove.
func sessionOf(id Identity, key *Key, c *jwt.Claims) verifiedSession {
	s := verifiedSession{user: id.User, lanes: id.Lanes, key: key, exp: int64(*c.Expiry)}
	if c.NotBefore != nil {
		s.nbf, s.hasNBF = int64(*c.NotBefore), true
	}
	if c.IssuedAt != nil {
		s.iat, s.hasIAT = int64(*c.IssuedAt), true
	}
	return s
}

// acceptedAt tells whether a fresh verification at now would accept the token's times: the
// very comparisons of go-jose's Claims.ValidateWithLeeway (nbf and iat: now+leeway not before
// them; exp: now-leeway not after it), so a cached session ends at the instant a fresh one
// would be refused.
func (s *verifiedSession) acceptedAt(now time.Time, leeway time.Duration) bool {
	if s.hasNBF && now.Add(leeway).Before(time.Unix(s.nbf, 0)) {
		return false
	}
	if s.expiredAt(now, leeway) {
		return false
	}
	return !(s.hasIAT && now.Add(leeway).Before(time.Unix(s.iat, 0)))
}

// expiredAt tells whether the token is past its exp (and the leeway): it never verifies again.
func (s *verifiedSession) expiredAt(now time.Time, leeway time.Duration) bool {
	return now.Add(-leeway).After(time.Unix(s.exp, 0))
}

// VerifiedCache remembers the sessions whose signature verified, so a buyer who sends the same
// session many times a second pays for one signature check (crypto/ecdsa.Verify was
// a third of the gateway's CPU).
//
// Keyed by the SHA-256 of the raw token rather than a keyed fast hash (maphash with a random
// per-process seed): a hit admits a request as someone, so two tokens must never share a key.
// SHA-256 makes that a matter of collision resistance, not of a 64-bit hash's odds (1 in 10^14
// per request with 100 000 entries, a fair chance over a year of sales) nor of a seed staying
// secret; and it costs a few hundred nanoseconds for a session token, against tens of
// microseconds for an ES256 check. The raw token is never kept.
//
// Shards of the package's lru, each with its own lock, chosen by the hash's first byte (the
// hash is uniform); the bound is split between them, so the total never exceeds it. Each
// shard forgets its least recently used session first.
type VerifiedCache struct {
	shards []lru[verifiedSession]
}

// maxShards is the most shards: enough that cores rarely meet on one lock; minShard keeps each
// shard big enough for its LRU to mean something.
const (
	maxShards = 64
	minShard  = 64
)

// NewVerifiedCache returns a cache of at most max sessions; nil (no cache) when max <= 0.
func NewVerifiedCache(max int) *VerifiedCache {
	if max <= 0 {
		return nil
	}
	n := maxShards
	for n > 1 && max < n*minShard {
		n /= 2
	}
	c := &VerifiedCache{shards: make([]lru[verifiedSession], n)}
	for i := range c.shards {
		size := max / n
		if i < max%n {
			size++
		}
		c.shards[i].init(size)
	}
	return c
}

// tokenKey is the cache key of a token: its SHA-256, computed without copying the token.
func tokenKey(token string) SessionKey {
	// Sum256 only reads its argument; the conversion would copy a token of a few hundred
	// bytes on every request.
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

func (c *VerifiedCache) shard(k SessionKey) *lru[verifiedSession] {
	return &c.shards[int(k[0])%len(c.shards)]
}

func (c *VerifiedCache) get(k SessionKey) (verifiedSession, bool) { return c.shard(k).get(k) }
func (c *VerifiedCache) put(k SessionKey, s verifiedSession)      { c.shard(k).put(k, s) }
func (c *VerifiedCache) remove(k SessionKey)                      { c.shard(k).remove(k) }

// Len is the number of sessions remembered.
func (c *VerifiedCache) Len() int {
	n := 0
	for i := range c.shards {
		n += c.shards[i].len()
	}
	return n
}
