//go:build integration

package room

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// seckill_token with require_admission, through a real Caddy: no admission, no token; an
// admission from the room gives one; a sale without a room is unaffected.
var admissionGateway = gateway(gatewayConfig{Token: map[string]any{"require_admission": true}})

func TestRequireAdmissionGivesATokenOnlyToUsersTheRoomAdmitted(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	gw := admissionGateway.Base(t)
	// One unit, one live admission: the second in line waits.
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	token := func(sale, user string) reply {
		return do(t, http.MethodPost, gw+"/seckill/"+sale+"/token", user, nil)
	}

	if got := token(r.Sale, "stranger"); got.Status != http.StatusForbidden || got.Code != contract.CodeNotAdmitted || got.Token != "" {
		t.Fatalf("a user who never entered the room: %d %s", got.Status, got.Raw)
	}
	first := enter(t, gw, r.Sale, "first", nil)
	second := enter(t, gw, r.Sale, "second", nil)
	if first.State != "admitted" || second.State != "waiting" {
		t.Fatalf("room: %s / %s", first.Raw, second.Raw)
	}
	if got := token(r.Sale, "second"); got.Status != http.StatusForbidden || got.Code != contract.CodeNotAdmitted {
		t.Fatalf("a waiting user: %d %s", got.Status, got.Raw)
	}
	if got := token(r.Sale, "first"); got.Status != http.StatusOK || got.Token == "" {
		t.Fatalf("the admitted user: %d %s", got.Status, got.Raw)
	}
	// An admission that ran out is no admission (the score is the admitted-until time).
	if err := rdb.ZAdd(ctx, contract.RoomLiveKey(r.Sale), redisZ("first", redisNow(t, rdb).Add(-time.Second))).Err(); err != nil {
		t.Fatal(err)
	}
	if got := token(r.Sale, "first"); got.Status != http.StatusForbidden || got.Code != contract.CodeNotAdmitted {
		t.Fatalf("a lapsed admission: %d %s", got.Status, got.Raw)
	}

	plain := testenv.ID("p")
	now := time.Now()
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(plain)}, plain, 2,
		now.Add(-time.Second).UnixMilli(), now.Add(time.Hour).UnixMilli(), "init", time.Hour.Milliseconds()).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), contract.MetaKey(plain), contract.TokensKey(plain)) })
	if got := token(plain, "stranger"); got.Status != http.StatusOK || got.Token == "" {
		t.Fatalf("a sale without a room: %d %s", got.Status, got.Raw)
	}
}

func redisZ(member string, until time.Time) redis.Z {
	return redis.Z{Member: member, Score: float64(until.UnixMilli())}
}
