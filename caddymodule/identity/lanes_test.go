package identity

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// lanesSession is a session of user whose "lanes" claim is lanes (none when nil).
func lanesSession(t *testing.T, k shoptest.Key, user string, lanes any) string {
	c := shoptest.Claims{Claims: shoptest.SessionClaims(user)}
	if lanes != nil {
		c.Extra = map[string]any{"lanes": lanes}
	}
	return shoptest.Sign(t, k, c)
}

// With lane_claim, a verified session sets {http.auth.user.lanes} from the token's claim (a
// string, or strings joined by spaces; empty for any other shape or none), and the request
// goes on whatever the claim holds; without lane_claim the placeholder is not set at all.
func TestLaneClaimSetsTheLanesPlaceholderFromTheVerifiedToken(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	h := handlerWith(t, "session", k)
	s := serve(h, request(nil, lanesSession(t, k, "alice", "member")))
	if s.status != http.StatusOK || s.lanesSet {
		t.Fatalf("without lane_claim: %d, lanes %q set %v", s.status, s.lanes, s.lanesSet)
	}

	h = handlerWith(t, "session", k)
	h.LaneClaim = "lanes"
	if err := h.setup(nil); err != nil {
		t.Fatal(err)
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
		{"erin", map[string]any{"member": true}, ""},
		{"frank", []any{"member", false}, ""},
	} {
		for range 2 { // the second a hit of the cache of verified sessions
			s := serve(h, request(http.Header{"X-User-Id": {"mallory"}}, lanesSession(t, k, c.user, c.lanes)))
			if s.status != http.StatusOK || s.user != c.user || !s.lanesSet || s.lanes != c.want {
				t.Errorf("%s (lanes %v): %d, user %q, lanes %q (set %v), want %q", c.user, c.lanes, s.status, s.user, s.lanes, s.lanesSet, c.want)
			}
		}
	}
	// A refused session sets nothing.
	forged := lanesSession(t, shoptest.NewKey(t, "k1", jose.ES256), "alice", "member")
	if s := serve(h, request(nil, forged)); s.status != http.StatusUnauthorized || s.lanesSet {
		t.Errorf("forged: %d, lanes %q set %v", s.status, s.lanes, s.lanesSet)
	}
}

// The seckill_jwt provider gives Caddy's authentication handler the lanes as the user's
// metadata "lanes", which that handler makes {http.auth.user.lanes}.
func TestTheProviderGivesTheLanesAsTheUsersMetadata(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	p := &handlerWith(t, "session", k).JWT
	user, ok, err := p.Authenticate(httptest.NewRecorder(), request(nil, lanesSession(t, k, "alice", "member")))
	if err != nil || !ok || user.ID != "alice" || user.Metadata != nil {
		t.Fatalf("without lane_claim: %+v %v %v", user, ok, err)
	}
	p.LaneClaim = "lanes"
	if err := p.setup(nil); err != nil {
		t.Fatal(err)
	}
	user, ok, err = p.Authenticate(httptest.NewRecorder(), request(nil, lanesSession(t, k, "alice", []string{"member", "staff"})))
	if err != nil || !ok || user.ID != "alice" || user.Metadata["lanes"] != "member staff" {
		t.Fatalf("with lane_claim: %+v %v %v", user, ok, err)
	}
	user, ok, err = p.Authenticate(httptest.NewRecorder(), request(nil, lanesSession(t, k, "bob", 3)))
	if err != nil || !ok || user.ID != "bob" || user.Metadata["lanes"] != "" {
		t.Fatalf("a number: %+v %v %v", user, ok, err)
	}
}
