//go:build integration

package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// The core's Redis-backed tests link no Caddy (TestTheSharedCorePartsLinkNoCaddy, in internal/testlayout): the room is set
// up as the backend's preheat does, through the scripts.

type coreRoom struct{ Sale string }

// newRoom preheats a sale whose window is [now+startsIn, now+endsIn) with a room of the
// script's defaults (room_setup.lua), as the backend's preheat does: the room first.
func newRoom(tb testing.TB, rdb redis.UniversalClient, stock int, startsIn, endsIn time.Duration) coreRoom {
	tb.Helper()
	ctx := context.Background()
	sale := testenv.ID("c")
	now := time.Now()
	pre := lua.PreheatCall{Sale: sale, Stock: int64(stock), Starts: now.Add(startsIn), Ends: now.Add(endsIn), Retention: time.Hour, Room: true}
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	if err := lua.RoomSetup.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.RoomKey(sale)},
		hex.EncodeToString(seed), hex.EncodeToString(ekey), "", "", "", "", "", "", hex.EncodeToString(sum[:]), "",
		pre.Ends.Add(pre.Retention).UnixMilli(), pre.Stock).Err(); err != nil {
		tb.Fatalf("room_setup: %v", err)
	}
	if _, _, err := pre.Run(ctx, rdb); err != nil {
		tb.Fatalf("preheat: %v", err)
	}
	tb.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.RoomKey(sale),
			contract.RoomQueueKey(sale), contract.RoomLiveKey(sale), contract.RoomSpentKey(sale), contract.RoomSeenKey(sale), contract.RoomAwayKey(sale), contract.RoomBackKey(sale), contract.RoomClaimKey(sale), contract.RoomIdleKey(sale),
			contract.RoomLogKey(sale))
	})
	return coreRoom{Sale: sale}
}

// RedisStore.Visit hands room_queue.lua the conversion-aware settings (the claim window, the
// bound) and the keys they need: through the store, an admission whose user takes no token
// is judged a no-show within the claim window and the next waiter is admitted; with no claim
// window he waits for the lapse.
func TestTheStoreRunsConversionAwareAdmission(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	for _, claim := range []time.Duration{300 * time.Millisecond, 0} {
		r := newRoom(t, rdb, 1, -time.Second, time.Hour)
		store := RedisStore{Client: rdb, Defaults: Settings{Rate: 1000, Oversubscribe: 1, Session: 10 * time.Minute, ClaimWindow: claim, OversubscribeMax: 3}}
		room, ok, err := store.Room(ctx, r.Sale)
		if err != nil || !ok {
			t.Fatalf("room: %v %v", ok, err)
		}
		visit := func(user string, enter bool) Reply {
			t.Helper()
			rep, err := store.Visit(ctx, r.Sale, Visit{Enter: enter, Admit: true, Presence: 100 * time.Millisecond,
				Member: PlaceOf(room.EntryKey, room.Seed, r.Sale, user).Member(user), Settings: room.Settings})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		if rep := visit("a", true); rep.Outcome != Admitted {
			t.Fatalf("a: %v, want admitted", rep.Outcome)
		}
		if rep := visit("b", true); rep.Outcome != Waiting {
			t.Fatalf("b: %v, want waiting", rep.Outcome)
		}
		until := time.Now().Add(time.Second)
		if claim > 0 {
			ms := rdb.ZScore(ctx, contract.RoomClaimKey(r.Sale), "a").Val()
			until = time.UnixMilli(int64(ms))
		}
		testenv.WaitFor(t, 5*time.Second, "Redis time past a's claim", func() bool { return rdb.Time(ctx).Val().After(until) })
		rep := visit("b", false)
		switch {
		case claim > 0 && rep.Outcome != Admitted:
			t.Fatalf("claim %v: b %v, want admitted once a is a no-show", claim, rep.Outcome)
		case claim == 0 && rep.Outcome != Waiting:
			t.Fatalf("no claim window: b %v, want waiting for a's lapse", rep.Outcome)
		}
		if claim > 0 {
			if rdb.ZScore(ctx, contract.RoomIdleKey(r.Sale), "a").Err() != nil || rdb.HGet(ctx, contract.RoomKey(r.Sale), "oversubscribe_max").Val() != "3" {
				t.Fatalf("a not judged a no-show, or the bound not passed: %v", rdb.HGetAll(ctx, contract.RoomKey(r.Sale)).Val())
			}
		}
	}
}
