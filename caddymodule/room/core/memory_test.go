//go:build integration

package core

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// BenchmarkRoomMemoryPerWaiter fills a room with SECKILL_ROOM_WAITERS waiting users (default
// 1 000 000) through room_queue.lua itself, and reports the memory Redis holds for them
// (MEMORY USAGE of every room key, all samples). Run it alone:
//
//	go test -run '^$' -bench RoomMemoryPerWaiter -benchtime 1x ./caddymodule/room/core/
func BenchmarkRoomMemoryPerWaiter(b *testing.B) { roomMemoryPerWaiter(b, false) }

// BenchmarkRoomMemoryPerWaiterWithPresence is the same room once every waiter has been seen
// (the presence rule): the gateways' ticks carry the users they answered from memory,
// as they do every summary_interval, so the room's seen set holds every waiter too. This is
// what a room whose waiters all poll costs Redis.
//
//	go test -run '^$' -bench RoomMemoryPerWaiterWithPresence -benchtime 1x ./caddymodule/room/core/
func BenchmarkRoomMemoryPerWaiterWithPresence(b *testing.B) { roomMemoryPerWaiter(b, true) }

// roomMemoryPerWaiter is both benchmarks: with presence, the ticks record every waiter in the
// seen set, and the seen, away and back sets are measured with the others.
func roomMemoryPerWaiter(b *testing.B, presence bool) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SECKILL_ROOM_WAITERS")); err == nil && v > 0 {
		n = v
	}
	rdb := testenv.Redis(b)
	ctx := context.Background()
	for range b.N {
		// Started, with no stock left to admit to: everyone waits (the worst case for memory).
		r := newRoom(b, rdb, 0, -time.Second, time.Hour)
		room, ok, err := (RedisStore{Client: rdb, Defaults: Settings{Rate: 50, Oversubscribe: 1.5, Session: time.Minute}}).Room(ctx, r.Sale)
		if err != nil || !ok {
			b.Fatalf("room: %v %v", ok, err)
		}
		keys := []string{contract.MetaKey(r.Sale), contract.RoomKey(r.Sale), contract.RoomQueueKey(r.Sale), contract.RoomLiveKey(r.Sale), contract.RoomSpentKey(r.Sale), contract.BuyersKey(r.Sale)}
		script := lua.RoomQueue
		if err := script.Load(ctx, rdb).Err(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		const batch = 2000
		for i := 0; i < n; i += batch {
			pipe := rdb.Pipeline()
			for j := i; j < min(i+batch, n); j++ {
				user := fmt.Sprintf("user%07d", j)
				m := PlaceOf(room.EntryKey, room.Seed, r.Sale, user).Member(user)
				script.EvalSha(ctx, pipe, keys, "enter", m, "50", "1.5", "60000", "900000", "", 0)
			}
			if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
				b.Fatal(err)
			}
		}
		took := time.Since(start)
		if got := rdb.ZCard(ctx, contract.RoomQueueKey(r.Sale)).Val(); got != int64(n) {
			b.Fatalf("%d places, want %d", got, n)
		}
		measured := keys[1:5]
		if presence {
			// The ticks, as a gateway sends them: at most MaxPresent users each, no
			// admission step (the stock is 0 anyway), each user told the longest refresh.
			pkeys := append(append([]string{}, keys...), contract.RoomLogKey(r.Sale), contract.RoomSeenKey(r.Sale), contract.RoomAwayKey(r.Sale), contract.RoomBackKey(r.Sale))
			for i := 0; i < n; i += MaxPresent {
				args := []any{"tick", "", "50", "1.5", "60000", "900000", "", 0, "", "", "0", "90000", "", ""}
				for j := i; j < min(i+MaxPresent, n); j++ {
					args = append(args, fmt.Sprintf("user%07d", j), 32000) // told 30 s, plus the grace
				}
				if err := script.EvalSha(ctx, rdb, pkeys, args...).Err(); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
			}
			if got := rdb.ZCard(ctx, contract.RoomSeenKey(r.Sale)).Val(); got != int64(n) {
				b.Fatalf("%d users seen, want %d", got, n)
			}
			measured = append(append([]string{}, measured...), contract.RoomSeenKey(r.Sale), contract.RoomAwayKey(r.Sale), contract.RoomBackKey(r.Sale))
		}
		var total int64
		for _, k := range measured {
			v, _ := rdb.MemoryUsage(ctx, k, 0).Result()
			total += v
		}
		b.ReportMetric(float64(total)/(1<<20), "MB")
		b.ReportMetric(float64(total)/float64(n), "B/waiter")
		b.ReportMetric(float64(n)/took.Seconds(), "entries/s")
		b.Logf("%d waiters: %.1f MB in Redis (%.0f B each); entered at %.0f/s", n, float64(total)/(1<<20), float64(total)/float64(n), float64(n)/took.Seconds())
		rdb.Unlink(ctx, contract.RoomQueueKey(r.Sale), contract.RoomSeenKey(r.Sale))
	}
}
