//go:build integration

package token

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckilledge/seckill/caddymodule/token/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// roomSale preheats a selling sale with a waiting room the way the backend does: the room
// first, then the sale's meta, marked "room" = 1.
func roomSale(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("rs")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.TokensKey(sale), contract.RoomKey(sale),
			contract.RoomLiveKey(sale), contract.RoomLogKey(sale))
	})
	a := lua.PreheatCall{Sale: sale, Stock: 5, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Minute, Room: true}
	seed := sha256.Sum256([]byte(sale))
	commit := sha256.Sum256(seed[:])
	if err := lua.RoomSetup.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.RoomKey(sale)},
		hex.EncodeToString(seed[:]), hex.EncodeToString(seed[:]), "", "", "", "", "", "", hex.EncodeToString(commit[:]), "",
		strconv.FormatInt(a.Ends.Add(a.Retention).UnixMilli(), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	return sale
}

// A room sale reaching a seckill_token without require_admission gets no token for anyone:
// 503 unavailable for the client, an error line and the misconfigured count for the operator.
// With require_admission the same sale answers a user without admission 403 not_admitted.
func TestATokenIssuerWithoutAdmissionRefusesARoomSaleLoudly(t *testing.T) {
	rdb := testenv.Redis(t)
	sale := roomSale(t, rdb)
	obs, logs := observer.New(zap.WarnLevel)
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	h.logger = zap.New(obs)
	before := count(string(core.Misconfigured))

	a := ask(t, h, "POST", tokenPath(sale), "eve")
	if a.status != 503 || a.body["code"] != contract.CodeUnavailable || !strings.Contains(a.body["message"], "require_admission") {
		t.Fatalf("a room sale without require_admission: %d %s", a.status, a.raw)
	}
	if d := count(string(core.Misconfigured)) - before; d != 1 {
		t.Fatalf("misconfigured counted %v times", d)
	}
	found := false
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "require_admission") && e.ContextMap()["sale"] == sale {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log line names the sale and the missing require_admission: %v", logs.All())
	}
	if n := rdb.HLen(context.Background(), contract.TokensKey(sale)).Val(); n != 0 {
		t.Fatal("a refused request recorded a token")
	}

	strict := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	strict.core.RequireAdmission = true
	if a := ask(t, strict, "POST", tokenPath(sale), "eve"); a.status != 403 || a.body["code"] != contract.CodeNotAdmitted {
		t.Fatalf("require_admission, no admission: %d %s", a.status, a.raw)
	}
}
