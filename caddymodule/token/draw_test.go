//go:build integration

package token

import (
	"context"
	"fmt"
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

// drawSale writes a drawn draw sale directly in Redis, as the backend leaves it after the draw
// (docs/draw.md): a selling sale with sizes S and M, meta draw = 1, the draw hash drawn, wave
// 1 of each size open for a minute on positions [0, 1). The test writes the entries.
func drawSale(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("ds")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(context.Background(), append(lua.GateCall{Sale: sale}.Keys(), contract.DrawKey(sale), contract.RoomLogKey(sale))...)
	})
	if _, _, err := (lua.PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Minute,
		Variants: []lua.Variant{{ID: "S", Stock: 1}, {ID: "M", Stock: 1}}}).Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	until := now.Add(time.Minute).UnixMilli()
	if err := rdb.HSet(ctx, contract.MetaKey(sale), "draw", "1", "w:S", fmt.Sprintf("1:0:1:%d", until),
		"w:M", fmt.Sprintf("1:0:1:%d", until)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, contract.DrawKey(sale), "seed", "00", "state", "drawn").Err(); err != nil {
		t.Fatal(err)
	}
	return sale
}

// A draw sale gives tokens to its live winners only, of any size: a waiting, withdrawn,
// undrawn or absent entrant is answered 403 not_admitted with a message about the draw (not
// the room's), and so is a winner once his claim window has ended; the wave that follows gives
// the next rank his token. Nothing is recorded for a refusal.
func TestATokenOfADrawSaleGoesToLiveWinnersOnly(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := drawSale(t, rdb)
	for u, v := range map[string]string{"ann": "00000001:S:0", "bob": "00000002:M:0", "cat": "00000003:S:1",
		"dan": "00000004:M:w", "eve": "00000005:S"} {
		if err := rdb.HSet(ctx, contract.DrawEntriesKey(sale), u, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	for _, u := range []string{"ann", "bob"} {
		if a := ask(t, h, "POST", tokenPath(sale), u); a.status != 200 || a.body["token"] == "" {
			t.Fatalf("a winner's token: %d %s", a.status, a.raw)
		}
	}
	notWon := func(who string) {
		t.Helper()
		a := ask(t, h, "POST", tokenPath(sale), who)
		if a.status != 403 || a.body["code"] != contract.CodeNotAdmitted || !strings.Contains(a.body["message"], "draw") {
			t.Fatalf("%s: %d %s, want 403 not_admitted about the draw", who, a.status, a.raw)
		}
	}
	for _, u := range []string{"cat", "dan", "eve", "fay"} {
		notWon(u)
	}
	if n := rdb.HLen(ctx, contract.TokensKey(sale)).Val(); n != 2 {
		t.Fatalf("%d tokens recorded, want the two winners'", n)
	}

	// S's wave 1 ends unclaimed: ann's win has lapsed; wave 2 reaches cat.
	ended := time.Now().Add(-time.Millisecond).UnixMilli()
	rdb.HSet(ctx, contract.MetaKey(sale), "w:S", fmt.Sprintf("1:0:1:%d", ended))
	notWon("ann")
	rdb.HSet(ctx, contract.MetaKey(sale), "w:S", fmt.Sprintf("2:1:2:%d", time.Now().Add(time.Minute).UnixMilli()))
	notWon("ann")
	if a := ask(t, h, "POST", tokenPath(sale), "cat"); a.status != 200 {
		t.Fatalf("wave 2's winner: %d %s", a.status, a.raw)
	}
}

// staleScripts is a Redis client of an issuer out of date with the scripts: it passes at most
// n keys, so token_issue.lua never sees the draw's entries.
type staleScripts struct {
	*redis.Client
	n int
}

func (s staleScripts) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return s.Client.EvalSha(ctx, sha, keys[:min(len(keys), s.n)], args...)
}

func (s staleScripts) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.Client.Eval(ctx, script, keys[:min(len(keys), s.n)], args...)
}

// A draw sale reached without the entries key gets no token for anyone, winner or not: 503
// unavailable, the draw_missing count and an error line naming the sale.
func TestATokenIssuerWithoutTheDrawEntriesKeyRefusesADrawSaleLoudly(t *testing.T) {
	rdb := testenv.Redis(t)
	sale := drawSale(t, rdb)
	if err := rdb.HSet(context.Background(), contract.DrawEntriesKey(sale), "ann", "00000001:S:0").Err(); err != nil {
		t.Fatal(err)
	}
	obs, logs := observer.New(zap.WarnLevel)
	h := newIssuer(t, staleScripts{Client: rdb, n: 6}, testRing(t), time.Minute, time.Minute)
	h.logger = zap.New(obs)
	before := count(string(core.DrawMissing))

	a := ask(t, h, "POST", tokenPath(sale), "ann")
	if a.status != 503 || a.body["code"] != contract.CodeUnavailable {
		t.Fatalf("a draw sale without its entries key: %d %s", a.status, a.raw)
	}
	if d := count(string(core.DrawMissing)) - before; d != 1 {
		t.Fatalf("draw_missing counted %v times", d)
	}
	found := false
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "draw") && e.ContextMap()["sale"] == sale {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log line names the sale and the draw: %v", logs.All())
	}
	if n := rdb.HLen(context.Background(), contract.TokensKey(sale)).Val(); n != 0 {
		t.Fatal("a refused request recorded a token")
	}
}
