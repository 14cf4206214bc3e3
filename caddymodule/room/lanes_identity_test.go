//go:build integration

package room

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// shopSecret is the HS256 key the test's shop signs its sessions with.
const shopSecret = "lanes-shop-secret-lanes-shop-secret-0123"

// shopSession is a session of user signed by the test's shop; lanes, when not nil, is its
// "lanes" claim (any JSON value).
func shopSession(t *testing.T, user string, lanes any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte(shopSecret)},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), "shop"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	b := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://shop.test", Subject: user,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))})
	if lanes != nil {
		b = b.Claims(map[string]any{"lanes": lanes})
	}
	tok, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A member's lane comes from the shop's signed session through a real gateway:
// seckill_identity's lane_claim sets {http.auth.user.lanes} from the verified token, and the
// room's lane_claims reads it. A member (the claim as an array or a string) enters the members
// lane; a session without the claim, or with a claim of another shape, enters the public lane;
// a client's own headers pick nothing.
var identityGateway = gateway(gatewayConfig{
	Identity: map[string]any{"handler": "seckill_identity", "issuer": "https://shop.test", "lane_claim": "lanes",
		"keys": []map[string]any{{"kid": "shop", "alg": "HS256", "value": shopSecret}}},
	Room: map[string]any{"user": "{http.auth.user.id}", "lane_claims": "{http.auth.user.lanes}"},
})

func TestAMembersSignedSessionPutsHisEntryInTheClaimLane(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	base := identityGateway.Base(t)
	r := newRoom(t, rdb, 10, 5*time.Minute, time.Hour, roomArgs{Lanes: "share,members:claim:0.5:member,public:public:0.5:"})
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.RoomLogKey(r.Sale), contract.RoomSeenKey(r.Sale), contract.RoomLaneQueueKey(r.Sale, "members"))
	})

	sessions := map[string]struct {
		lanes any
		lane  string
	}{
		"alice": {[]string{"staff", "member"}, "members"},
		"bob":   {"member", "members"},
		"carol": {nil, "public"},
		"dave":  {42, "public"},
		"erin":  {[]any{"member", 7}, "public"},
		"frank": {map[string]any{"member": true}, "public"},
	}
	for user, s := range sessions {
		headers := map[string]string{"Authorization": "Bearer " + shopSession(t, user, s.lanes),
			// What a client could send to pick a lane: nothing reads it.
			"X-Test-Claims": "member", "X-User-ID": "mallory"}
		if got := enter(t, base, r.Sale, "", headers); got.Status != http.StatusOK || got.State != "waiting" {
			t.Fatalf("%s enters: %d %s", user, got.Status, got.Raw)
		}
	}
	if got := enter(t, base, r.Sale, "", map[string]string{"X-Test-Claims": "member"}); got.Status != http.StatusUnauthorized || got.Code != contract.CodeUnauthenticated {
		t.Fatalf("no session: %d %s, want 401 unauthenticated", got.Status, got.Raw)
	}

	laneOf := map[string]string{}
	for lane, key := range map[string]string{"members": contract.RoomLaneQueueKey(r.Sale, "members"), "public": contract.RoomQueueKey(r.Sale)} {
		ms, err := rdb.ZRange(context.Background(), key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			u := m[core.RankLen+core.EntryIDLen:]
			if prev, dup := laneOf[u]; dup {
				t.Fatalf("%s holds places in lanes %s and %s", u, prev, lane)
			}
			laneOf[u] = lane
		}
	}
	var users []string
	for u := range laneOf {
		users = append(users, u)
	}
	slices.Sort(users)
	if len(users) != len(sessions) {
		t.Fatalf("places for %v, want one for each of the %d sessions", users, len(sessions))
	}
	for user, s := range sessions {
		if laneOf[user] != s.lane {
			t.Errorf("%s (lanes claim %v) is in lane %q, want %q", user, s.lanes, laneOf[user], s.lane)
		}
	}
}
