//go:build integration

package lua

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// claimSale writes a drawn draw sale directly in Redis, as the backend leaves it after the
// draw (docs/draw.md): the meta hash of a selling sale with the given variants and a limit of
// 1, marked draw = 1; the draw hash drawn; an empty entries hash for the test to fill (with
// claimEntry) and no wave yet (claimWave). Its keys are removed at the end.
func claimSale(t *testing.T, rdb *redis.Client, variants ...Variant) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("dc")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(context.Background(), append(GateCall{Sale: sale}.Keys(), contract.DrawKey(sale))...)
	})
	if created, _, err := (PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Variants: variants}).Run(ctx, rdb); err != nil || !created {
		t.Fatalf("preheat: %v %v", created, err)
	}
	if err := rdb.HSet(ctx, contract.MetaKey(sale), "draw", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, contract.DrawKey(sale), "seed", "00", "state", "drawn").Err(); err != nil {
		t.Fatal(err)
	}
	return sale
}

// claimWave makes [lo, hi) of variant's ranking its current wave, claimable until until.
func claimWave(t *testing.T, rdb *redis.Client, sale, variant string, wave, lo, hi int, until time.Time) {
	t.Helper()
	v := fmt.Sprintf("%d:%d:%d:%d", wave, lo, hi, until.UnixMilli())
	if err := rdb.HSet(context.Background(), contract.MetaKey(sale), "w:"+variant, v).Err(); err != nil {
		t.Fatal(err)
	}
}

// claimEntry writes user's entry as the entry handler and the draw leave it.
func claimEntry(t *testing.T, rdb *redis.Client, sale, user, value string) {
	t.Helper()
	if err := rdb.HSet(context.Background(), contract.DrawEntriesKey(sale), user, value).Err(); err != nil {
		t.Fatal(err)
	}
}

// claimToken runs token_issue.lua as seckill_token does on an unsharded sale (room keys and
// the draw's entries, no admission flag).
func claimToken(t *testing.T, rdb *redis.Client, sale, user string) []any {
	t.Helper()
	keys := []string{contract.MetaKey(sale), contract.TokensKey(sale), contract.BuyersKey(sale),
		contract.RoomKey(sale), contract.RoomLiveKey(sale), contract.RoomLogKey(sale), contract.DrawEntriesKey(sale)}
	res, err := TokenIssue.Run(context.Background(), rdb, keys, user, testNonce, 60_000, 0, "", "").Slice()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// notWon reports whether a gate reply is the draw's not_admitted.
func notWon(res []any) bool {
	return len(res) == 2 && res[0] == int64(15) && res[1] == "draw"
}

// A winner of wave 1 takes a token and buys the size he won, and only that one; naming none
// buys it too. Everyone else (waiting, withdrawn, entered but not drawn, never entered) gets
// neither a token nor the purchase, and a refusal writes nothing: the presented token stays
// live, the stock is untouched.
func TestADrawSellsOnlyToItsWinnersTheSizeEachWon(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := claimSale(t, rdb, Variant{ID: "S", Stock: 2}, Variant{ID: "M", Stock: 1})
	until := time.Now().Add(time.Minute)
	claimWave(t, rdb, sale, "S", 1, 0, 2, until)
	claimWave(t, rdb, sale, "M", 1, 0, 1, until)
	claimEntry(t, rdb, sale, "ann", "00000001:S:1")
	claimEntry(t, rdb, sale, "cat", "00000003:M:0")
	claimEntry(t, rdb, sale, "bob", "00000002:S:2") // waiting: past wave 1's ranks
	claimEntry(t, rdb, sale, "dan", "00000004:S:w") // withdrawn before the close
	claimEntry(t, rdb, sale, "eve", "00000005:S")   // entered, not drawn

	tok := claimToken(t, rdb, sale, "ann")
	if tok[0] != "issued" {
		t.Fatalf("token of a live winner: %v", tok)
	}
	res, err := GateCall{Sale: sale, User: "ann", OrderID: "o-ann-m", TokenValue: storeValue(tok), Group: "relay", Variant: "M"}.Run(ctx, rdb)
	if err != nil || !notWon(res) {
		t.Fatalf("a winner of S buying M: %v %v", res, err)
	}
	if got := rdb.HGet(ctx, contract.TokensKey(sale), "ann").Val(); got != storeValue(tok) {
		t.Fatalf("the refusal spent the token: %q", got)
	}
	if got := rdb.HMGet(ctx, contract.MetaKey(sale), "stock", "v:M").Val(); got[0] != "3" || got[1] != "1" {
		t.Fatalf("the refusal touched the stock: %v", got)
	}
	res, err = GateCall{Sale: sale, User: "ann", OrderID: "o-ann", TokenValue: storeValue(tok), Group: "relay", Variant: "S"}.Run(ctx, rdb)
	if err != nil || code(res) != 0 || res[3] != "S" {
		t.Fatalf("a winner of S buying S: %v %v", res, err)
	}
	if res := buyItem(t, rdb, sale, "ann", "o-ann-2", "S", 0); code(res) != 5 || res[1] != "o-ann" {
		t.Fatalf("the winner again: %v, want already_bought with his order", res)
	}

	if res := buyItem(t, rdb, sale, "cat", "o-cat", "", 0); code(res) != 0 || res[3] != "M" {
		t.Fatalf("a winner naming no variant: %v, want the variant he won", res)
	}

	for _, u := range []string{"bob", "dan", "eve", "fay"} {
		if tok := claimToken(t, rdb, sale, u); tok[0] != "not_admitted" || len(tok) != 4 || tok[3] != "draw" {
			t.Errorf("token of %s: %v, want not_admitted (draw)", u, tok)
		}
		for _, v := range []string{"S", ""} {
			if res := buyItem(t, rdb, sale, u, "o-"+u, v, 0); !notWon(res) {
				t.Errorf("%s buying %q: %v, want not_admitted (draw)", u, v, res)
			}
		}
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(sale)).Val(); n != 2 {
		t.Fatalf("outbox holds %d orders, want the two winners'", n)
	}
	if got := rdb.HGet(ctx, contract.MetaKey(sale), "v:S").Val(); got != "1" {
		t.Fatalf("S left: %s, want 1", got)
	}
}

// A win lasts until its claim window ends, by Redis TIME: after it the winner gets no token and
// cannot buy; when the backend opens wave 2 on the next ranks, its winner buys and the expired
// winner of wave 1 still cannot. A lost entry (the variant done) never buys.
func TestADrawWinLapsesWithItsWaveAndTheNextWaveBuys(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := claimSale(t, rdb, Variant{ID: "S", Stock: 1}, Variant{ID: "M", Stock: 1})
	claimWave(t, rdb, sale, "S", 1, 0, 1, time.Now().Add(-time.Millisecond))
	claimEntry(t, rdb, sale, "ann", "00000001:S:0")
	claimEntry(t, rdb, sale, "bob", "00000002:S:1")
	claimEntry(t, rdb, sale, "cat", "00000003:S:2")

	if tok := claimToken(t, rdb, sale, "ann"); tok[0] != "not_admitted" {
		t.Fatalf("token after the claim window: %v", tok)
	}
	if res := buyItem(t, rdb, sale, "ann", "o-ann", "S", 0); !notWon(res) {
		t.Fatalf("purchase after the claim window: %v", res)
	}

	claimWave(t, rdb, sale, "S", 2, 1, 2, time.Now().Add(time.Minute))
	if tok := claimToken(t, rdb, sale, "bob"); tok[0] != "issued" {
		t.Fatalf("token of wave 2's winner: %v", tok)
	}
	if res := buyItem(t, rdb, sale, "ann", "o-ann", "", 0); !notWon(res) {
		t.Fatalf("wave 1's winner in wave 2: %v", res)
	}
	if res := buyItem(t, rdb, sale, "bob", "o-bob", "", 0); code(res) != 0 || res[3] != "S" {
		t.Fatalf("wave 2's winner: %v", res)
	}

	// The variant is done: cat, past the last wave, has lost.
	if err := rdb.HSet(ctx, contract.MetaKey(sale), "wd:S", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if res := buyItem(t, rdb, sale, "cat", "o-cat", "S", 0); !notWon(res) {
		t.Fatalf("a lost entry: %v", res)
	}
	if n := rdb.XLen(ctx, contract.OutboxKey(sale)).Val(); n != 1 {
		t.Fatalf("outbox holds %d orders, want bob's alone", n)
	}
}

// A draw sale reached without the draw's entries key (a caller out of date with the scripts)
// is refused by both scripts, never sold to whoever asks: gate {16}, token "draw_missing".
// A sale that is not a draw still sells without the key.
func TestADrawSaleWithoutItsEntriesKeySellsToNobody(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := claimSale(t, rdb, Variant{ID: "S", Stock: 1})
	claimWave(t, rdb, sale, "S", 1, 0, 1, time.Now().Add(time.Minute))
	claimEntry(t, rdb, sale, "ann", "00000001:S:0")

	c := GateCall{Sale: sale, User: "ann", OrderID: "o-ann", Group: "relay", Variant: "S"}
	for _, n := range []int{7, 4} {
		res, err := Gate.Run(ctx, rdb, c.Keys()[:n], c.Args()...).Slice()
		if err != nil || len(res) != 1 || res[0] != int64(16) {
			t.Fatalf("gate with %d keys: %v %v, want {16}", n, res, err)
		}
		if res, err := Gate.Run(ctx, rdb, c.Keys()[:n], append(c.Args()[:6:6], "")...).Slice(); err != nil || res[0] != int64(16) {
			t.Fatalf("gate with %d keys, no variant named: %v %v, want {16}", n, res, err)
		}
	}
	for _, n := range []int{6, 3} {
		keys := []string{contract.MetaKey(sale), contract.TokensKey(sale), contract.BuyersKey(sale),
			contract.RoomKey(sale), contract.RoomLiveKey(sale), contract.RoomLogKey(sale)}[:n]
		res, err := TokenIssue.Run(ctx, rdb, keys, "ann", testNonce, 60_000, 0, "", "").Slice()
		if err != nil || res[0] != "draw_missing" {
			t.Fatalf("token with %d keys: %v %v, want draw_missing", n, res, err)
		}
	}
	if n := rdb.HLen(ctx, contract.TokensKey(sale)).Val() + rdb.HLen(ctx, contract.BuyersKey(sale)).Val(); n != 0 {
		t.Fatalf("a refusal wrote %d tokens or buyers", n)
	}

	plain := variantSale(t, rdb, 1, Variant{ID: "S", Stock: 1})
	p := GateCall{Sale: plain, User: "ann", OrderID: "o-ann", Group: "relay", Variant: "S"}
	if res, err := Gate.Run(ctx, rdb, p.Keys()[:4], p.Args()...).Slice(); err != nil || res[0] != int64(0) {
		t.Fatalf("a sale that is no draw, 4 keys: %v %v", res, err)
	}
}
