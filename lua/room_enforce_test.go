//go:build integration

package lua

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A room sale as the backend preheats it: room_setup.lua first (the meta key does not exist
// yet), then preheat.lua with the room's key, which marks the meta hash "room" = 1.
// session_ms is the room's own session (how long an admission lives).
func preheatRoomSale(t *testing.T, rdb *redis.Client, stock int, sessionMS string) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("rs")
	now := time.Now()
	t.Cleanup(func() {
		rdb.Del(context.Background(), append(roomKeys(sale), contract.TokensKey(sale), contract.OutboxKey(sale),
			contract.HeldKey(sale), contract.RoomLogKey(sale))...)
	})
	a := PreheatCall{Sale: sale, Stock: int64(stock), Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Minute, Room: true}
	if err := setupRoom(ctx, rdb, sale, sessionMS, a.Ends.Add(a.Retention)); err != nil {
		t.Fatalf("room_setup before the sale exists: %v", err)
	}
	if _, _, err := a.Run(ctx, rdb); err != nil {
		t.Fatalf("preheat with the room: %v", err)
	}
	return sale
}

func setupRoom(ctx context.Context, rdb *redis.Client, sale, sessionMS string, until time.Time) error {
	seed := sha256.Sum256([]byte(sale))
	commit := sha256.Sum256(seed[:])
	k := roomKeys(sale)
	return RoomSetup.Run(ctx, rdb, k[:2], hex.EncodeToString(seed[:]), hex.EncodeToString(seed[:]),
		"", "", sessionMS, "", "", "", hex.EncodeToString(commit[:]), "", strconv.FormatInt(until.UnixMilli(), 10)).Err()
}

// admit enters user into the room and lets the room admit him (rate 1000/s, one admission per
// unit), with the given session.
func admit(t *testing.T, rdb *redis.Client, sale, user, sessionMS string) int64 {
	t.Helper()
	m := member(rankOf(user), user)
	res, err := RoomQueue.Run(context.Background(), rdb, roomKeys(sale), "enter", m, "1000", "1", sessionMS, "0", "", 0).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; res[0] != "admitted" && i < 50; i++ {
		time.Sleep(20 * time.Millisecond)
		if res, err = RoomQueue.Run(context.Background(), rdb, roomKeys(sale), "poll", m, "1000", "1", sessionMS, "0", "", 0).Slice(); err != nil {
			t.Fatal(err)
		}
	}
	if res[0] != "admitted" {
		t.Fatalf("%s never admitted: %v", user, res)
	}
	return res[3].(int64)
}

// roomToken runs token_issue.lua as seckill_token does on an unsharded sale: the room's keys
// always, the flag when require_admission is on.
func roomToken(t *testing.T, rdb *redis.Client, sale, user string, admission bool) []any {
	t.Helper()
	flag := ""
	if admission {
		flag = "1"
	}
	keys := []string{contract.MetaKey(sale), contract.TokensKey(sale), contract.BuyersKey(sale),
		contract.RoomKey(sale), contract.RoomLiveKey(sale), contract.RoomLogKey(sale)}
	res, err := TokenIssue.Run(context.Background(), rdb, keys, user, testNonce, 60_000, 0, "", flag).Slice()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func roomBuy(t *testing.T, rdb *redis.Client, sale, user, order, token string, admission bool) []any {
	t.Helper()
	res, err := GateCall{Sale: sale, User: user, OrderID: order, TokenValue: token, Group: "relay", Admission: admission}.Run(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func storeValue(res []any) string { return testNonce + ":" + strconv.FormatInt(res[1].(int64), 10) }

// This file's tests stay serial (no t.Parallel, unlike the rest of the package): they wait
// for real time to pass (an expiry, a claim window) and then read what the script did.

// preheat.lua writes a room sale only once its room is there, and marks it; room_setup.lua
// can run before the sale exists. A room is refused on a sharded sale's base hash: rooms are
// for unsharded sales (the backend refuses room with shards), so no shard ever sells around one.
func TestARoomSaleIsWrittenOnlyWithItsRoom(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("rs")
	t.Cleanup(func() { rdb.Del(context.Background(), roomKeys(sale)...) })
	now := time.Now()
	a := PreheatCall{Sale: sale, Stock: 5, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour), Retention: time.Minute, Room: true}
	if _, _, err := a.Run(ctx, rdb); err == nil {
		t.Fatal("preheat wrote a room sale whose room is not set up")
	}
	if n := rdb.Exists(ctx, contract.MetaKey(sale)).Val(); n != 0 {
		t.Fatal("a refused preheat left the sale in Redis")
	}
	if err := setupRoom(ctx, rdb, sale, "", a.Ends.Add(a.Retention)); err != nil {
		t.Fatalf("room_setup before preheat: %v", err)
	}
	if created, stock, err := a.Run(ctx, rdb); err != nil || !created || stock != 5 {
		t.Fatalf("preheat with the room: %v %d %v", created, stock, err)
	}
	if got := rdb.HGet(ctx, contract.MetaKey(sale), "room").Val(); got != "1" {
		t.Fatalf("meta room = %q, want 1", got)
	}
	metaExp := rdb.PExpireTime(ctx, contract.MetaKey(sale)).Val()
	if roomExp := rdb.PExpireTime(ctx, contract.RoomKey(sale)).Val(); metaExp <= 0 || roomExp != metaExp {
		t.Fatalf("room expires at %v, meta at %v", roomExp, metaExp)
	}
	// A later call without the room's key (an older caller) never drops the mark.
	a.Room = false
	if _, _, err := a.Run(ctx, rdb); err != nil || rdb.HGet(ctx, contract.MetaKey(sale), "room").Val() != "1" {
		t.Fatalf("a preheat without the room dropped the mark: %v", err)
	}

	sharded := testenv.ID("rs")
	t.Cleanup(func() { rdb.Del(context.Background(), roomKeys(sharded)...) })
	if err := setupRoom(ctx, rdb, sharded, "", now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (PreheatCall{Sale: sharded, Starts: now, Ends: now.Add(time.Hour), Shards: 4, Room: true}).Run(ctx, rdb); err == nil {
		t.Fatal("a sharded sale's base hash took a room")
	}
}

// A room sale reaching a token issuer or a gate that does not check admissions is refused
// (misconfigured), never sold to whoever asks; the same sale through gateways that check
// sells to the admitted user only.
func TestAGatewayWithoutAdmissionRefusesARoomSaleLoudly(t *testing.T) {
	rdb := testenv.Redis(t)
	sale := preheatRoomSale(t, rdb, 3, "")

	if got := roomToken(t, rdb, sale, "eve", false); got[0] != "misconfigured" {
		t.Fatalf("token without require_admission on a room sale: %v", got)
	}
	if got := roomBuy(t, rdb, sale, "eve", "o-eve", "", false); got[0] != int64(13) {
		t.Fatalf("gate without require_admission on a room sale: %v", got)
	}
	if got := roomToken(t, rdb, sale, "eve", true); got[0] != "not_admitted" {
		t.Fatalf("token for a user the room did not admit: %v", got)
	}
	if got := roomBuy(t, rdb, sale, "eve", "o-eve", "", true); got[0] != int64(15) {
		t.Fatalf("purchase by a user the room did not admit: %v", got)
	}
	if n := rdb.HGet(context.Background(), contract.MetaKey(sale), "stock").Val(); n != "3" {
		t.Fatalf("refusals changed the stock to %s", n)
	}

	admit(t, rdb, sale, "ann", "60000")
	tok := roomToken(t, rdb, sale, "ann", true)
	if tok[0] != "issued" {
		t.Fatalf("token for an admitted user: %v", tok)
	}
	if got := roomBuy(t, rdb, sale, "ann", "o-ann", storeValue(tok), false); got[0] != int64(13) {
		t.Fatalf("an admitted user's purchase through a gate without require_admission: %v", got)
	}
	if got := roomBuy(t, rdb, sale, "ann", "o-ann", storeValue(tok), true); got[0] != int64(0) {
		t.Fatalf("an admitted user's purchase: %v", got)
	}

	// A sale without a room is untouched by either setting.
	plain := openSale(t, rdb, 2)
	for _, admission := range []bool{false, true} {
		if got := roomToken(t, rdb, plain, "bob", admission); got[0] != "issued" {
			t.Fatalf("token on a sale without a room (admission %v): %v", admission, got)
		}
	}
	if got := roomBuy(t, rdb, plain, "bob", "o-bob", "", false); got[0] != int64(0) {
		t.Fatalf("purchase on a sale without a room: %v", got)
	}
}

// A sale that says it has a room whose state is gone from Redis (evicted, deleted) refuses
// everyone: the missing room is no reason to open the sale.
func TestARoomSaleWhoseRoomIsLostSellsToNobody(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := preheatRoomSale(t, rdb, 3, "")
	admit(t, rdb, sale, "ann", "60000")
	tok := roomToken(t, rdb, sale, "ann", true)
	if tok[0] != "issued" {
		t.Fatalf("token: %v", tok)
	}
	rdb.Del(ctx, contract.RoomKey(sale))
	if got := roomToken(t, rdb, sale, "bob", true); got[0] != "room_missing" {
		t.Fatalf("token on a room sale without its room: %v", got)
	}
	if got := roomBuy(t, rdb, sale, "ann", "o-ann", storeValue(tok), true); got[0] != int64(14) {
		t.Fatalf("purchase on a room sale without its room: %v", got)
	}
	if got := roomBuy(t, rdb, sale, "bob", "o-bob", "", false); got[0] != int64(13) {
		t.Fatalf("purchase without require_admission: %v", got)
	}
}

// The gate checks the admission in the purchase's own round trip: a token taken while the
// admission lived buys nothing once it lapsed (the room gave the place to the next in line).
// The refusal writes nothing: the token is not spent, the stock is untouched.
func TestATokenDoesNotOutliveItsAdmission(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := preheatRoomSale(t, rdb, 3, "")
	until := admit(t, rdb, sale, "ann", "1000") // a one-second session
	tok := roomToken(t, rdb, sale, "ann", true)
	if tok[0] != "issued" || tok[1].(int64) <= until {
		t.Fatalf("token: %v (admitted until %d): the token must outlive the admission for this test", tok, until)
	}
	time.Sleep(time.Until(time.UnixMilli(until)) + 50*time.Millisecond)
	if got := roomBuy(t, rdb, sale, "ann", "o-ann", storeValue(tok), true); got[0] != int64(15) {
		t.Fatalf("purchase after the admission lapsed: %v", got)
	}
	if n := rdb.HGet(ctx, contract.MetaKey(sale), "stock").Val(); n != "3" {
		t.Fatalf("stock %s after a refusal", n)
	}
	if v := rdb.HGet(ctx, contract.TokensKey(sale), "ann").Val(); v != storeValue(tok) {
		t.Fatalf("the refusal spent the token: %q", v)
	}
}

// TestAPurchaseWithAnotherKeyThanThePlacesIsRefused: on a room sale whose user's place is
// bound to a device key (room:keys, written by the first bound entry), token_issue.lua and
// gate.lua refuse a request proved with another key, even one holding a token; with the
// place's key both go through.
func TestAPurchaseWithAnotherKeyThanThePlacesIsRefused(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := preheatRoomSale(t, rdb, 5, "60000")
	t.Cleanup(func() { rdb.Del(context.Background(), contract.RoomKeysKey(sale)) })
	admit(t, rdb, sale, "u1", "60000")
	rdb.HSet(ctx, contract.RoomKeysKey(sale), "u1", "place-key")
	keys := []string{contract.MetaKey(sale), contract.TokensKey(sale), contract.BuyersKey(sale),
		contract.RoomKey(sale), contract.RoomLiveKey(sale), contract.RoomLogKey(sale), contract.DrawEntriesKey(sale),
		contract.RoomKeysKey(sale)}
	issue := func(jkt string) []any {
		res, err := TokenIssue.Run(ctx, rdb, keys, "u1", testNonce, 60_000, 0, "", "1", jkt).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, jkt := range []string{"other-key", ""} {
		if res := issue(jkt); res[0] != "proof_key_mismatch" {
			t.Fatalf("a token for key %q: %v, want proof_key_mismatch", jkt, res)
		}
	}
	// A token the user holds (issued to the place's key) is still refused with another
	// proof's key by the purchase itself.
	res := issue("place-key")
	if res[0] != "issued" {
		t.Fatalf("a token for the place's key: %v", res)
	}
	buy := func(order, jkt string) []any {
		res, err := GateCall{Sale: sale, User: "u1", OrderID: order, TokenValue: storeValue(res), Group: "relay", Admission: true,
			ProofJTI: order, ProofWindow: time.Minute, ProofJKT: jkt}.Run(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if got := buy("o-other", "other-key"); got[0] != int64(18) {
		t.Fatalf("a purchase proved with another key: %v, want {18}", got)
	}
	if got := buy("o-place", "place-key"); got[0] != int64(0) {
		t.Fatalf("a purchase proved with the place's key: %v, want accepted", got)
	}
}
