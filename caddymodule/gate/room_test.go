//go:build integration

package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// roomSale preheats a selling sale with a waiting room the way the backend does: the room
// first, then the sale's meta, marked "room" = 1.
func roomSale(t testing.TB, rdb *redis.Client, stock int) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("rs")
	now := time.Now()
	t.Cleanup(func() { rdb.Del(context.Background(), lua.GateCall{Sale: sale}.Keys()...) })
	a := lua.PreheatCall{Sale: sale, Stock: int64(stock), Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Room: true, Namespace: testNamespace}
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

// A room sale reaching a seckill_gate without require_admission sells to nobody: 503
// unavailable for the client, an error line naming the sale and the decisions counted under
// outcome misconfigured for the operator. With require_admission the gate sells only to a user
// whose admission is live at the purchase.
func TestAGatewayWithoutAdmissionRefusesARoomSaleLoudly(t *testing.T) {
	rdb := testenv.Redis(t)
	g, _ := inProcessGate(t, rdb)
	obs, logs := observer.New(zap.WarnLevel)
	g.logger = zap.New(obs)
	sale := roomSale(t, rdb, 3)
	counter := decisions.WithLabelValues(sale, string(core.Misconfigured))
	before := testutil.ToFloat64(counter)

	a := buyBody(t, g, sale, "eve", "")
	if a.Status != 503 || a.Code != contract.CodeUnavailable || !strings.Contains(a.Raw, "require_admission") {
		t.Fatalf("a room sale through a gate without require_admission: %d %s", a.Status, a.Raw)
	}
	if d := testutil.ToFloat64(counter) - before; d != 1 {
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

	g.decider.RequireAdmission = true
	if a := buyBody(t, g, sale, "eve", ""); a.Status != 403 || a.Code != contract.CodeNotAdmitted {
		t.Fatalf("require_admission, no admission: %d %s", a.Status, a.Raw)
	}
	rdb.ZAdd(context.Background(), contract.RoomLiveKey(sale), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "ann"})
	if a := buyBody(t, g, sale, "ann", ""); a.Status != 202 || a.OrderID == "" {
		t.Fatalf("require_admission, a live admission: %d %s", a.Status, a.Raw)
	}
	if n := stockOf(t, rdb, sale); n != 2 {
		t.Fatalf("stock %d, want 2: only the admitted purchase took a unit", n)
	}
}
