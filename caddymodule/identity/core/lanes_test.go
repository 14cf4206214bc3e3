package core

import (
	"context"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// A lane claim is a string or an array of strings; any other shape picks no lane.
func TestALaneClaimIsAStringOrStringsAndAnythingElseIsIgnored(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		want  string
	}{
		{"absent", nil, ""},
		{"a string", "member", "member"},
		{"a string of several", "member staff", "member staff"},
		{"an array of strings", []any{"member", "staff"}, "member staff"},
		{"an empty array", []any{}, ""},
		{"a number", 42.0, ""},
		{"a boolean", true, ""},
		{"an object", map[string]any{"member": true}, ""},
		{"an array with a number", []any{"member", 7.0}, ""},
		{"an array of arrays", []any{[]any{"member"}}, ""},
	} {
		if got := LaneValue(c.value); got != c.want {
			t.Errorf("%s (%v): %q, want %q", c.name, c.value, got, c.want)
		}
	}
}

// The verifier reads the lane claim of a verified token, and a cache hit answers the same
// lanes as the full check did; a claim of another shape leaves the session verified with no
// lanes; without LaneClaim nothing is read.
func TestTheVerifierReadsTheLaneClaimAndTheCacheKeepsIt(t *testing.T) {
	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.ES256)
	session := func(user string, lanes any) string {
		c := shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: user,
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}}
		if lanes != nil {
			c.Extra = map[string]any{"lanes": lanes}
		}
		return shoptest.Sign(t, k, c)
	}
	for _, withCache := range []bool{false, true} {
		v := staticVerifier(t, now, k)
		v.LaneClaim = "lanes"
		if withCache {
			v.Cache = NewVerifiedCache(100)
		}
		for _, c := range []struct {
			user  string
			lanes any
			want  string
		}{
			{"alice", []string{"member", "staff"}, "member staff"},
			{"bob", "member", "member"},
			{"carol", nil, ""},
			{"dave", 42, ""},
			{"erin", []any{"member", 7}, ""},
		} {
			tok := session(c.user, c.lanes)
			for i := range 2 { // the second time a cache hit, with the cache
				id, o := v.VerifyIdentity(context.Background(), tok)
				if o != Verified || id.User != c.user || id.Lanes != c.want {
					t.Errorf("cache %v, %s (lanes %v), try %d: %s %+v, want verified with lanes %q", withCache, c.user, c.lanes, i, o, id, c.want)
				}
			}
		}
		if withCache && v.Signatures() != 5 {
			t.Errorf("%d signature checks for 5 sessions sent twice, want 5", v.Signatures())
		}
	}

	// Without LaneClaim the claim is not read; with a custom user claim too.
	v := staticVerifier(t, now, k)
	if id, o := v.VerifyIdentity(context.Background(), session("alice", "member")); o != Verified || id != (Identity{User: "alice"}) {
		t.Errorf("without lane_claim: %s %+v", o, id)
	}
	v.UserClaim, v.LaneClaim = "uid", "lanes"
	tok := shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, Extra: map[string]any{"uid": "u-7", "lanes": "member"}})
	if id, o := v.VerifyIdentity(context.Background(), tok); o != Verified || id != (Identity{User: "u-7", Lanes: "member"}) {
		t.Errorf("user_claim uid with lane_claim: %s %+v", o, id)
	}
	// A refused token names neither user nor lanes.
	forged := shoptest.Sign(t, shoptest.NewKey(t, "k1", jose.ES256), shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer,
		Audience: jwt.Audience{shoptest.Audience}, Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, Extra: map[string]any{"uid": "u-7", "lanes": "member"}})
	if id, o := v.VerifyIdentity(context.Background(), forged); o != BadSignature || id != (Identity{}) {
		t.Errorf("forged: %s %+v", o, id)
	}
}
