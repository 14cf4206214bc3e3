package core

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/contract"
)

// Outcome is what became of one request's credential: Verified, or why it was refused. The
// set is closed (it labels metrics).
type Outcome string

// The Outcomes of Verifier.Verify (and of reading the credential off the request).
const (
	Verified Outcome = "verified"
	// Missing: no cookie and no bearer token.
	Missing Outcome = "missing"
	// Ambiguous: two Authorization headers, or the session cookie twice. Which one would the
	// shop have meant? Neither is believed.
	Ambiguous Outcome = "ambiguous"
	// TooLarge: a token over MaxToken bytes, refused before parsing.
	TooLarge Outcome = "too_large"
	// Malformed: not a compact JWS, an algorithm outside HS256/RS256/ES256/EdDSA (none
	// included), or claims that are not JSON.
	Malformed Outcome = "malformed"
	// UnknownKey: no key has the token's kid (after at most one JWKS refetch).
	UnknownKey Outcome = "unknown_kid"
	// WrongAlgorithm: the token's alg is not the one its key is pinned to.
	WrongAlgorithm Outcome = "wrong_alg"
	// BadSignature: the signature does not verify.
	BadSignature Outcome = "bad_signature"
	// Expired: exp is past (beyond the leeway), or missing: a session must end.
	Expired Outcome = "expired"
	// NotYetValid: nbf or iat is in the future beyond the leeway.
	NotYetValid Outcome = "not_yet_valid"
	// TooLong: the session lasts longer than max_age (exp more than max_age after its iat, or
	// after now without iat): a token "valid until 5138" is a key to the account for ever.
	TooLong Outcome = "too_long"
	// WrongIssuer, WrongAudience: iss or aud is not the configured one.
	WrongIssuer   Outcome = "wrong_issuer"
	WrongAudience Outcome = "wrong_audience"
	// BadUser: the user claim is missing or not a contract id (^[A-Za-z0-9_-]{1,64}$).
	BadUser Outcome = "bad_user"
	// NoKeys: no key could be loaded yet (the JWKS endpoint has not answered since start).
	// Not the client's fault: 503, not 401.
	NoKeys Outcome = "no_keys"
)

// Outcomes lists every outcome, so each metric series exists from the start.
var Outcomes = []Outcome{Verified, Missing, Ambiguous, TooLarge, Malformed, UnknownKey, WrongAlgorithm,
	BadSignature, Expired, NotYetValid, TooLong, WrongIssuer, WrongAudience, BadUser, NoKeys}

// MaxToken is the longest token read. A session token is a few hundred bytes; an 8 KiB one is
// an attempt to make the gateway decode and hash a lot for nothing.
const MaxToken = 8 << 10

// Errors of a KeySource.
var (
	ErrUnknownKey = errors.New("no key with this kid")
	ErrNoKeys     = errors.New("no verification key loaded yet")
)

// KeySource finds the key a token names.
type KeySource interface {
	// Key returns the key with this kid: ErrUnknownKey when there is none, ErrNoKeys when no
	// key has ever been loaded. It may wait for a JWKS fetch, never longer than ctx allows.
	Key(ctx context.Context, kid string) (*Key, error)
}

// Verifier decides whether a token is a valid session and whose. It knows nothing of HTTP or
// Caddy: the tests call it with a clock of their own.
type Verifier struct {
	Keys KeySource
	// Issuer and Audience, when not empty, must be the token's iss and one of its aud.
	Issuer   string
	Audience string
	// UserClaim names the claim holding the user id; "" or "sub" is the subject.
	UserClaim string
	// LaneClaim, when not empty, names the claim holding the user's lane claims (the claim
	// values a waiting room's claim lanes match, docs/room.md "Lanes"): a string is taken as
	// it is, an array of strings is joined by spaces; any other value (a number, an object,
	// an array with anything but strings in it) is ignored, as if the claim were absent. The
	// session is verified either way: the lanes only pick a queue, they never refuse anyone.
	LaneClaim string
	// Leeway is the clock skew forgiven on exp, nbf and iat.
	Leeway time.Duration
	// MaxAge, when positive, is the longest session accepted: exp at most MaxAge (plus Leeway)
	// after iat, or after now when the token has no iat.
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// Cache remembers verified sessions (nil: every token is verified in full). A hit applies
	// Leeway and Now as a fresh check does, but Issuer, Audience, UserClaim and LaneClaim were
	// read when the session was cached: with a cache they must not change once Verify is
	// called.
	Cache *VerifiedCache

	// signatures counts signature checks (tests: a cache hit makes none).
	signatures atomic.Int64
}

// Identity is what a verified session proves: the user, and the lane claims (LaneClaim's
// value, "" without one).
type Identity struct {
	User  string
	Lanes string
}

// Verify checks token and returns the user it names, or why not (VerifyIdentity, without the
// lanes).
func (v *Verifier) Verify(ctx context.Context, token string) (string, Outcome) {
	id, o := v.VerifyIdentity(ctx, token)
	return id.User, o
}

// VerifyIdentity checks token and returns who it names, or why not. A token verified before
// is answered from the cache while the time and its key still allow it, with the same answer
// a fresh verification would give (docs/identity.md, "The cache of verified sessions").
func (v *Verifier) VerifyIdentity(ctx context.Context, token string) (Identity, Outcome) {
	if len(token) > MaxToken {
		return Identity{}, TooLarge
	}
	if v.Cache == nil {
		id, o, _ := v.verify(ctx, token)
		return id, o
	}
	k := tokenKey(token)
	if s, ok := v.Cache.get(k); ok {
		now := v.now()
		if s.acceptedAt(now, v.Leeway) {
			// The key that verified it must still be the one its kid names: dropped from the
			// JWKS, or replaced under the same kid, and the token is verified afresh (and
			// refused).
			if key, err := v.Keys.Key(ctx, s.key.ID); err == nil && key == s.key {
				jwtCacheHits.Inc()
				return Identity{User: s.user, Lanes: s.lanes}, Verified
			}
			v.Cache.remove(k)
		} else if s.expiredAt(now, v.Leeway) {
			v.Cache.remove(k)
		}
	}
	jwtCacheMisses.Inc()
	id, o, s := v.verify(ctx, token)
	// Only a success is remembered: a forged or garbage token never takes a place, so a flood
	// of them evicts nothing.
	if o == Verified {
		v.Cache.put(k, s)
	}
	return id, o
}

// Signatures is the number of signatures v has checked: a cache hit checks none.
func (v *Verifier) Signatures() int64 { return v.signatures.Load() }

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// verify checks token in full: parse, key, signature, claims. On success it also returns what
// the cache keeps.
func (v *Verifier) verify(ctx context.Context, token string) (Identity, Outcome, verifiedSession) {
	var none verifiedSession
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil || len(tok.Headers) != 1 {
		return Identity{}, Malformed, none
	}
	h := tok.Headers[0]
	key, err := v.Keys.Key(ctx, h.KeyID)
	switch {
	case errors.Is(err, ErrNoKeys):
		return Identity{}, NoKeys, none
	case err != nil:
		return Identity{}, UnknownKey, none
	case h.Algorithm != string(key.Alg):
		return Identity{}, WrongAlgorithm, none
	}

	v.signatures.Add(1)
	var claims jwt.Claims
	var id Identity
	subject := v.UserClaim == "" || v.UserClaim == "sub"
	if subject && v.LaneClaim == "" {
		err = tok.Claims(key.Verifier, &claims)
		id.User = claims.Subject
	} else {
		// Only a custom claim pays for a map.
		var extra map[string]any
		err = tok.Claims(key.Verifier, &claims, &extra)
		if subject {
			id.User = claims.Subject
		} else {
			id.User, _ = extra[v.UserClaim].(string)
		}
		if v.LaneClaim != "" {
			id.Lanes = LaneValue(extra[v.LaneClaim])
		}
	}
	if err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return Identity{}, BadSignature, none
		}
		return Identity{}, Malformed, none
	}
	if claims.Expiry == nil {
		return Identity{}, Expired, none
	}
	want := jwt.Expected{Issuer: v.Issuer, Time: v.now()}
	if v.Audience != "" {
		want.AnyAudience = jwt.Audience{v.Audience}
	}
	switch err := claims.ValidateWithLeeway(want, v.Leeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return Identity{}, Expired, none
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Identity{}, NotYetValid, none
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return Identity{}, WrongIssuer, none
	case errors.Is(err, jwt.ErrInvalidAudience):
		return Identity{}, WrongAudience, none
	default:
		return Identity{}, Malformed, none
	}
	if v.MaxAge > 0 {
		start := v.now()
		if claims.IssuedAt != nil {
			start = claims.IssuedAt.Time()
		}
		if claims.Expiry.Time().Sub(start) > v.MaxAge+v.Leeway {
			return Identity{}, TooLong, none
		}
	}
	if !contract.ValidID(id.User) {
		return Identity{}, BadUser, none
	}
	return id, Verified, sessionOf(id, key, &claims)
}

// LaneValue is the lane claims a lane claim's decoded JSON value holds: a string as it is, an
// array of strings joined by spaces, "" for anything else (absent, a number, a boolean, an
// object, an array holding anything but strings): a shop's claim of another shape picks no
// lane rather than a lane nobody meant.
func LaneValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return ""
			}
			parts[i] = s
		}
		return strings.Join(parts, " ")
	}
	return ""
}
