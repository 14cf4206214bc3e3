//go:build integration

package lua

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

const testNonce = "0123456789012345678901"

// openSale preheats a selling sale with stock units and removes its keys at the end.
func openSale(t *testing.T, rdb *redis.Client, stock int) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now().UnixMilli()
	if err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, stock, now-60_000, now+3_600_000, "init", 60_000).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Del(ctx, contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale), contract.CompensatedKey(sale))
	})
	return sale
}

func gateKeys(sale string) []string {
	return []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale)}
}

func tokenKeys(sale string) []string {
	return []string{contract.MetaKey(sale), contract.TokensKey(sale), contract.BuyersKey(sale)}
}

func gate(t *testing.T, rdb *redis.Client, sale, user, order, token string) []any {
	t.Helper()
	res, err := Gate.Run(context.Background(), rdb, gateKeys(sale), sale, user, order, token, "relay").Slice()
	if err != nil {
		t.Fatalf("gate: %v", err)
	}
	return res
}

func issue(t *testing.T, rdb *redis.Client, sale, user string) []any {
	t.Helper()
	res, err := TokenIssue.Run(context.Background(), rdb, tokenKeys(sale), user, testNonce, 60_000, 0).Slice()
	if err != nil {
		t.Fatalf("token_issue: %v", err)
	}
	return res
}

// The operator's pause (meta state = paused) stops both scripts until it is lifted, whatever
// the stock and window say; nothing is written while it lasts.
func TestAPausedSaleAcceptsNothingAndMintsNothingUntilResumed(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := openSale(t, rdb, 5)
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldState, contract.StatePaused)

	if got := gate(t, rdb, sale, "u1", "o1", ""); got[0].(int64) != 8 {
		t.Fatalf("gate while paused = %v, want [8] (paused)", got)
	}
	if got := issue(t, rdb, sale, "u1"); got[0] != contract.CodePaused {
		t.Fatalf("token_issue while paused = %v, want paused", got)
	}
	if n := rdb.Exists(ctx, contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale)).Val(); n != 0 {
		t.Fatalf("%d keys written while paused", n)
	}
	if s := rdb.HGet(ctx, contract.MetaKey(sale), "stock").Val(); s != "5" {
		t.Fatalf("stock %s after a paused purchase, want 5", s)
	}

	for _, resume := range []func(){
		func() { rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldState, contract.StateOpen) },
		func() { rdb.HDel(ctx, contract.MetaKey(sale), contract.FieldState) },
	} {
		rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldState, contract.StatePaused)
		resume()
		user := testenv.ID("u")
		if got := issue(t, rdb, sale, user); got[0] != "issued" {
			t.Fatalf("token_issue after resume = %v, want issued", got)
		}
		if got := gate(t, rdb, sale, user, testenv.ID("o"), ""); got[0].(int64) != 0 {
			t.Fatalf("gate after resume = %v, want accepted", got)
		}
	}
}

func TestAnEndedStateEndsTheSaleBeforeItsEndTime(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	sale := openSale(t, rdb, 5)
	rdb.HSet(context.Background(), contract.MetaKey(sale), contract.FieldState, contract.StateEnded)
	if got := gate(t, rdb, sale, "u1", "o1", ""); got[0].(int64) != 3 {
		t.Fatalf("gate on an ended sale = %v, want [3] (ended)", got)
	}
	if got := issue(t, rdb, sale, "u1"); got[0] != contract.CodeEnded {
		t.Fatalf("token_issue on an ended sale = %v, want ended", got)
	}
}

// The gate script checks the token's expiry against Redis TIME: a gateway whose clock is
// behind cannot make it accept an expired token, and the token is not consumed.
func TestTheGateScriptRefusesATokenExpiredByRedisTime(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := openSale(t, rdb, 5)
	expired := testNonce + ":" + strconv.FormatInt(time.Now().Add(-2*time.Second).UnixMilli(), 10)
	rdb.HSet(ctx, contract.TokensKey(sale), "u1", expired)
	if got := gate(t, rdb, sale, "u1", "o1", expired); got[0].(int64) != 9 {
		t.Fatalf("gate with an expired token = %v, want [9] (token_expired)", got)
	}
	if rdb.HGet(ctx, contract.TokensKey(sale), "u1").Val() != expired {
		t.Fatal("an expired token was consumed")
	}
	live := testNonce + ":" + strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	rdb.HSet(ctx, contract.TokensKey(sale), "u1", live)
	if got := gate(t, rdb, sale, "u1", "o1", live); got[0].(int64) != 0 {
		t.Fatalf("gate with a live token = %v, want accepted", got)
	}
}

// A buyer is told his order by both scripts, before and after sell-out, and gets no new token.
func TestABuyerIsToldHisOrderAndGetsNoNewToken(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := openSale(t, rdb, 1)
	if got := gate(t, rdb, sale, "buyer", "order-1", ""); got[0].(int64) != 0 {
		t.Fatalf("first purchase = %v", got)
	}
	got := issue(t, rdb, sale, "buyer")
	if got[0] != contract.CodeAlreadyBought || len(got) != 4 || got[3] != "order-1" {
		t.Fatalf("token_issue for a buyer = %v, want [already_bought 0 now order-1]", got)
	}
	if rdb.HExists(ctx, contract.TokensKey(sale), "buyer").Val() {
		t.Fatal("a token was minted for a buyer")
	}
	// The stock is gone now: a stranger is told sold_out, the buyer still his order, even
	// with a token that is not (or no longer) valid.
	if got := issue(t, rdb, sale, "stranger"); got[0] != contract.CodeSoldOut {
		t.Fatalf("token_issue after sell-out = %v, want sold_out", got)
	}
	if rdb.HExists(ctx, contract.TokensKey(sale), "stranger").Val() {
		t.Fatal("a token was minted after sell-out")
	}
	if got := gate(t, rdb, sale, "buyer", "order-2", "spent:1"); got[0].(int64) != 5 || got[1] != "order-1" {
		t.Fatalf("gate for a buyer = %v, want [5 order-1]", got)
	}
}

// An empty shard still issues tokens: the buyer's refusal at its gate is what makes the
// backend move units there.
func TestAnEmptyShardStillIssuesTokens(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	shard := contract.ShardID(testenv.ID("s"), 0)
	now := time.Now().UnixMilli()
	if err := Preheat.Run(ctx, rdb, []string{contract.MetaKey(shard)}, shard, 0, now-1000, now+3_600_000, "init", 60_000).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(ctx, contract.MetaKey(shard), contract.TokensKey(shard)) })
	res, err := TokenIssue.Run(ctx, rdb, tokenKeys(shard), "u1", testNonce, 60_000, 0, "shard").Slice()
	if err != nil || res[0] != "issued" {
		t.Fatalf("token_issue on an empty shard = %v, %v; want issued", res, err)
	}
}

// compensate.lua never leaves a compensated set without a TTL, even when the sale's meta
// hash is gone.
func TestTheCompensatedSetAlwaysExpires(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	keys := func(sale string) []string {
		return []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.CompensatedKey(sale)}
	}
	// The sale is in Redis: the set expires with its meta hash.
	sale := openSale(t, rdb, 1)
	gate(t, rdb, sale, "u1", "o1", "")
	if err := Compensate.Run(ctx, rdb, keys(sale), sale, "o1", "u1").Err(); err != nil {
		t.Fatal(err)
	}
	metaTTL, setTTL := rdb.PTTL(ctx, contract.MetaKey(sale)).Val(), rdb.PTTL(ctx, contract.CompensatedKey(sale)).Val()
	if setTTL <= 0 || setTTL > metaTTL+time.Second {
		t.Fatalf("compensated PTTL %v, meta PTTL %v: want the sale's expiry", setTTL, metaTTL)
	}
	// The meta hash is gone but the buyers hash (which the gate gave the sale's expiry) is not.
	sale2 := openSale(t, rdb, 2)
	gate(t, rdb, sale2, "u1", "o1", "")
	gate(t, rdb, sale2, "u2", "o2", "")
	buyersTTL := rdb.PTTL(ctx, contract.BuyersKey(sale2)).Val()
	rdb.Del(ctx, contract.MetaKey(sale2))
	if err := Compensate.Run(ctx, rdb, keys(sale2), sale2, "o1", "u1").Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, contract.CompensatedKey(sale2)).Val(); ttl <= 0 || ttl > buyersTTL+time.Second {
		t.Fatalf("compensated PTTL %v without meta, want the buyers' %v", ttl, buyersTTL)
	}
	// Nothing of the sale is left: at most a day.
	sale3 := testenv.ID("s")
	t.Cleanup(func() { rdb.Del(ctx, keys(sale3)...) })
	if err := Compensate.Run(ctx, rdb, keys(sale3), sale3, "o1", "u1").Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, contract.CompensatedKey(sale3)).Val(); ttl <= 0 || ttl > 24*time.Hour {
		t.Fatalf("compensated PTTL %v for a sale gone from Redis, want (0, 24h]", ttl)
	}
}
