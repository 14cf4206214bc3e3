//go:build integration

package sales

import (
	"context"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// A sale's room bounds its queue: max_waiters in "room" is checked, reaches the room
// hash at preheat, and leaves it when the sale no longer sets it; the stock the room was set up
// with is kept for the gateways' built-in bound.
func TestASaleRoomsMaxWaitersIsCheckedAndReachesRedis(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	for _, bad := range []int64{0, -5, 10_000_001} {
		if err := (admin.RoomSpec{MaxWaiters: n(bad)}).Validate(); err == nil {
			t.Errorf("max_waiters %d accepted", bad)
		}
	}
	rdb := testenv.Redis(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	t.Cleanup(func() { rdb.Del(context.Background(), contract.MetaKey(sale), contract.RoomKey(sale)) })
	if err := lua.Preheat.Run(ctx, rdb, []string{contract.MetaKey(sale)}, sale, 10,
		now.Add(time.Hour).UnixMilli(), now.Add(2*time.Hour).UnixMilli(), "init", 60_000).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := PreheatRoom(ctx, rdb, sale, admin.RoomSpec{MaxWaiters: n(500)}, time.Time{}, 0); err != nil {
		t.Fatal(err)
	}
	h := rdb.HGetAll(ctx, contract.RoomKey(sale)).Val()
	if h["max_waiters"] != "500" || h["units"] != "10" {
		t.Fatalf("room hash: max_waiters %q units %q, want 500 and 10", h["max_waiters"], h["units"])
	}
	if _, err := PreheatRoom(ctx, rdb, sale, admin.RoomSpec{}, time.Time{}, 0); err != nil {
		t.Fatal(err)
	}
	if rdb.HExists(ctx, contract.RoomKey(sale), "max_waiters").Val() {
		t.Fatal("max_waiters stays after the sale stopped setting it")
	}
}
