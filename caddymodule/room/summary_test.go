package room

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// farRoom is a started room at 1 admission per second (front window 10 s: 10 places) with
// n waiters behind the first admission; it returns the waiters' tickets, placed (r2).
func farRoom(t *testing.T, gw string, n int) (testRoom, map[string]string) {
	t.Helper()
	rdb := testenv.Redis(t)
	r := newRoom(t, rdb, 100, -time.Second, time.Hour, roomArgs{Rate: "1", Oversubscribe: "1", SessionMS: "60000"})
	tickets := map[string]string{}
	for i := range n {
		u := fmt.Sprintf("u%02d", i)
		a := enter(t, gw, r.Sale, u, nil)
		if a.Status != 200 {
			t.Fatalf("enter %s: %d %s", u, a.Status, a.Raw)
		}
		tickets[u] = a.Ticket
	}
	return r, tickets
}

// Issue 28: a waiter far from the front is answered from the gateway's summary; the only
// commands naming the room are the gateway's ticks (at most one per summary_interval), however
// many polls.
func TestAPollFarFromTheFrontMakesNoRedisCommand(t *testing.T) {
	rdb := testenv.Redis(t)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.Room = map[string]any{"cache_ttl": "10m", "summary_interval": "1s"}
	gw := startCaddy(t, cfg)
	r, tickets := farRoom(t, gw, 40)
	far := tickets["u39"]
	if p := poll(t, gw, r.Sale, "u39", far); p.State != "waiting" || p.Position < 30 {
		t.Fatalf("far waiter: %s", p.Raw)
	}

	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, RoomKey(r.Sale), marker)
	const polls = 50
	began := time.Now()
	for i := range polls {
		p := poll(t, gw, r.Sale, "u39", far)
		if p.Status != 200 || p.State != "waiting" || p.Position < 25 || len(p.EstimatedWaitRangeS) != 2 {
			t.Fatalf("poll %d: %d %s", i, p.Status, p.Raw)
		}
	}
	elapsed := time.Since(began)
	testenv.WaitFor(t, 10*time.Second, "the monitor to see a marker sent after the polls", func() bool {
		rdb.Exists(context.Background(), marker)
		return m.marked.Load()
	})
	ticks := int64(math.Ceil(elapsed.Seconds())) + 1
	if got := m.count.Load(); got > ticks {
		t.Fatalf("%d far polls in %v sent %d commands naming the room, want at most %d (the ticks)", polls, elapsed, got, ticks)
	}
	// The answer agrees with Redis: the place's rank less the cursor, within what one tick
	// can lag (a second and a half of admissions at 1/s).
	cursor, _ := rdb.HGet(context.Background(), RoomKey(r.Sale), "cursor").Int64()
	p := poll(t, gw, r.Sale, "u39", far)
	if exact := 39 - cursor + 1; p.Position < exact || p.Position > exact+2 {
		t.Fatalf("from memory: position %d, Redis says %d", p.Position, exact)
	}
}

// A waiter near the front still asks Redis on every poll: admission reaches him at once.
func TestAPollNearTheFrontStillAsksRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.Room = map[string]any{"cache_ttl": "10m", "summary_interval": "1s"}
	gw := startCaddy(t, cfg)
	r, tickets := farRoom(t, gw, 5)
	near := tickets["u03"]
	poll(t, gw, r.Sale, "u03", near)
	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, RoomKey(r.Sale), marker)
	const polls = 10
	for range polls {
		poll(t, gw, r.Sale, "u03", near)
	}
	testenv.WaitFor(t, 10*time.Second, "the marker", func() bool {
		rdb.Exists(context.Background(), marker)
		return m.marked.Load()
	})
	if got := m.count.Load(); got < polls {
		t.Fatalf("%d polls near the front sent %d commands naming the room, want one each", polls, got)
	}
}

// Before the start every pre-queue waiter is answered from memory: the pre-queue's size and
// the time to the start.
func TestPrequeuePollsBeforeTheStartAreAnsweredFromMemory(t *testing.T) {
	rdb := testenv.Redis(t)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.Room = map[string]any{"cache_ttl": "10m", "summary_interval": "1s"}
	gw := startCaddy(t, cfg)
	r := newRoom(t, rdb, 10, 10*time.Minute, time.Hour, roomArgs{})
	var tk string
	for i := range 5 {
		tk = enter(t, gw, r.Sale, fmt.Sprintf("p%d", i), nil).Ticket
	}
	poll(t, gw, r.Sale, "p4", tk)
	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, RoomKey(r.Sale), marker)
	began := time.Now()
	for i := range 30 {
		p := poll(t, gw, r.Sale, "p4", tk)
		if p.State != "waiting" || p.Position != 5 || p.EstimatedWaitS < 500 {
			t.Fatalf("pre-queue poll %d: %s, want waiting at the pre-queue's size 5, ~600 s to the start", i, p.Raw)
		}
	}
	elapsed := time.Since(began)
	testenv.WaitFor(t, 10*time.Second, "the marker", func() bool {
		rdb.Exists(context.Background(), marker)
		return m.marked.Load()
	})
	if got, ticks := m.count.Load(), int64(math.Ceil(elapsed.Seconds()))+1; got > ticks {
		t.Fatalf("30 pre-queue polls in %v sent %d commands naming the room, want at most %d", elapsed, got, ticks)
	}
}

// Sold out, pause and end reach a far waiter within a second on two gateways, with no event
// published (the ticks see them).
func TestSoldOutPauseAndEndReachAFarWaiterWithinASecondThroughTwoGateways(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	cfg.Port2 = testenv.FreePort(t)
	gw := startCaddy(t, cfg)
	gw2 := fmt.Sprintf("http://127.0.0.1:%d", cfg.Port2)
	r, tickets := farRoom(t, gw, 40)
	far := tickets["u39"]
	for _, g := range []string{gw, gw2} {
		if p := poll(t, g, r.Sale, "u39", far); p.State != "waiting" {
			t.Fatalf("%s: %s", g, p.Raw)
		}
	}
	meta := contract.MetaKey(r.Sale)
	within := func(what, want string) {
		t.Helper()
		began := time.Now()
		for _, g := range []string{gw, gw2} {
			for {
				p := poll(t, g, r.Sale, "u39", far)
				if p.State == want {
					break
				}
				if time.Since(began) > time.Second {
					t.Fatalf("%s: %s still answers %s after %v, want %s", what, g, p.Raw, time.Since(began), want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	rdb.HSet(ctx, meta, "state", "paused")
	within("pause", "paused")
	rdb.HSet(ctx, meta, "state", "open")
	within("resume", "waiting")
	rdb.HSet(ctx, meta, "stock", 0)
	within("sold out", "sold_out")
	rdb.HSet(ctx, meta, "stock", 100)
	within("restock", "waiting")
	rdb.HSet(ctx, meta, "ends_ms", redisNow(t, rdb).UnixMilli())
	within("end", "ended")
}

// A gateway's view of a room is bounded: the pace's samples, one summary and at most
// maxPresent users, whatever the number of waiters.
func TestARoomViewStaysWithinItsBound(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rooms = 20
	views := make([]*roomView, rooms)
	for i := range views {
		views[i] = newRoomView()
		for u := range 3 * maxPresent {
			views[i].seen(fmt.Sprintf("user-%08d-%d", u, i))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / rooms
	for _, v := range views {
		if len(v.present) != maxPresent {
			t.Fatalf("a view remembers %d users, want at most %d", len(v.present), maxPresent)
		}
	}
	t.Logf("a full room view: %d bytes (%d users remembered)", per, maxPresent)
	if per > 512<<10 {
		t.Fatalf("a full room view takes %d bytes, want at most 512 KiB", per)
	}
	runtime.KeepAlive(views)
}
