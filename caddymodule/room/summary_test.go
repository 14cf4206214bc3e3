//go:build integration

package room

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
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

// A waiter far from the front is answered from the gateway's summary; the only
// commands naming the room are the gateway's ticks (at most one per summary_interval), however
// many polls.
var farGateway = gateway(gatewayConfig{Room: map[string]any{"cache_ttl": "10m", "summary_interval": "1s"}})

// Serial: the answer from memory may lag Redis by what one tick (a second) lets through.
func TestAPollFarFromTheFrontMakesNoRedisCommand(t *testing.T) {
	rdb := testenv.Redis(t)
	gw := farGateway.Base(t)
	r, tickets := farRoom(t, gw, 40)
	far := tickets["u39"]
	if p := poll(t, gw, r.Sale, "u39", far); p.State != "waiting" || p.Position < 30 {
		t.Fatalf("far waiter: %s", p.Raw)
	}

	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, contract.RoomKey(r.Sale), marker)
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
	// The cursor read after the poll: the summary's is the same or older (a smaller cursor, a
	// position further back).
	p := poll(t, gw, r.Sale, "u39", far)
	cursor, _ := rdb.HGet(context.Background(), contract.RoomKey(r.Sale), "cursor").Int64()
	if exact := 39 - cursor + 1; p.Position < exact || p.Position > exact+2 {
		t.Fatalf("from memory: position %d, Redis says %d", p.Position, exact)
	}
}

// A waiter near the front still asks Redis on every poll: admission reaches him at once.
// front_window set: every poll near the front asks Redis (the default answers the front from
// memory: TestTheFrontIsAnsweredFromMemoryAndAsksRedisAboutOncePerWaiter).
var nearGateway = gateway(gatewayConfig{Room: map[string]any{"cache_ttl": "10m", "summary_interval": "1s", "front_window": "10s"}})

func TestAPollNearTheFrontStillAsksRedis(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := nearGateway.Base(t)
	r, tickets := farRoom(t, gw, 5)
	near := tickets["u03"]
	poll(t, gw, r.Sale, "u03", near)
	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, contract.RoomKey(r.Sale), marker)
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
var prequeueMemoryGateway = gateway(gatewayConfig{Room: map[string]any{"cache_ttl": "10m", "summary_interval": "1s"}})

func TestPrequeuePollsBeforeTheStartAreAnsweredFromMemory(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := prequeueMemoryGateway.Base(t)
	r := newRoom(t, rdb, 10, 10*time.Minute, time.Hour, roomArgs{})
	var tk string
	for i := range 5 {
		tk = enter(t, gw, r.Sale, fmt.Sprintf("p%d", i), nil).Ticket
	}
	poll(t, gw, r.Sale, "p4", tk)
	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, contract.RoomKey(r.Sale), marker)
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
var farTwoGateway = gateway(gatewayConfig{Two: true})

// Serial: it times the changes' way to the waiter (a second).
func TestSoldOutPauseAndEndReachAFarWaiterWithinASecondThroughTwoGateways(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	gw, gw2 := farTwoGateway.Two(t)
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

// Through a gateway: however many polls, the script runs the admission step (its HSET of the
// room's cursor) at most once per admit_interval.
var admitIntervalGateway = gateway(gatewayConfig{Room: map[string]any{"cache_ttl": "10m", "admit_interval": "500ms"}})

// Serial: it counts the steps against the polls' elapsed time, and MONITOR's lines trail.
func TestAdmissionDoesNotRideOnEveryPoll(t *testing.T) {
	gw := admitIntervalGateway.Base(t)
	r, tickets := farRoom(t, gw, 3)
	near := tickets["u02"]
	poll(t, gw, r.Sale, "u02", near)
	steps := startScriptMonitor(t, "HSET", contract.RoomKey(r.Sale))
	const polls = 40
	began := time.Now()
	for range polls {
		if p := poll(t, gw, r.Sale, "u02", near); p.Status != 200 {
			t.Fatalf("poll: %s", p.Raw)
		}
		time.Sleep(15 * time.Millisecond) // past one admit_interval in all
	}
	elapsed := time.Since(began)
	time.Sleep(200 * time.Millisecond) // MONITOR's lines trail the answers
	if got, most := steps.Load(), int64(elapsed/(500*time.Millisecond))+1; got > most || got == 0 {
		t.Fatalf("%d polls in %v ran the admission step %d times, want 1 to %d", polls, elapsed, got, most)
	}
}

// startScriptMonitor counts, through MONITOR, the commands scripts run (MONITOR marks them
// "lua") of the given name on key.
func startScriptMonitor(t *testing.T, cmd, key string) *atomic.Int64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", testenv.RedisAddr(), 5*time.Second)
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(conn, 1<<20)
		first := true
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if first {
				first = false
				close(ready)
				continue
			}
			if strings.Contains(line, " lua]") && strings.Contains(strings.ToUpper(line), `"`+cmd+`"`) && strings.Contains(line, `"`+key+`"`) {
				n.Add(1)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("MONITOR did not start")
	}
	t.Cleanup(func() { conn.Close(); <-done })
	return &n
}

// Admission goes to waiters who are there: a waiter who stops polling keeps his
// place but is passed; the next present waiter is admitted; when he comes back he is first.
var presenceGateway = gateway(gatewayConfig{Room: map[string]any{"refresh_min": "1s", "refresh_max": "1s", "summary_interval": "500ms", "presence_window": "3s"}})

// Serial: bob's polls must keep within the 3 s presence window while alice's lapses.
func TestAnAbsentWaiterIsPassedKeepsHisPlaceAndIsAdmittedWhenHeComesBack(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	gw := presenceGateway.Base(t)
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000"})
	first := enter(t, gw, r.Sale, "first", nil)
	alice := enter(t, gw, r.Sale, "alice", nil)
	bob := enter(t, gw, r.Sale, "bob", nil)
	if first.State != "admitted" || alice.Position != 1 || bob.Position != 2 {
		t.Fatalf("entries: %s / %s / %s", first.Raw, alice.Raw, bob.Raw)
	}
	// Alice closes her tab; bob keeps polling past the presence window.
	for deadline := time.Now().Add(3500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		poll(t, gw, r.Sale, "bob", bob.Ticket)
	}
	rdb.ZAdd(ctx, contract.RoomLiveKey(r.Sale), redisZ("first", time.UnixMilli(1))) // first's admission runs out
	testenv.WaitFor(t, 5*time.Second, "bob's admission", func() bool {
		return poll(t, gw, r.Sale, "bob", bob.Ticket).State == "admitted"
	})
	// Alice comes back: her place was kept, she is first in line.
	if p := poll(t, gw, r.Sale, "alice", alice.Ticket); p.State != "waiting" || p.Position != 1 {
		t.Fatalf("alice back: %s, want waiting at 1", p.Raw)
	}
	carol := enter(t, gw, r.Sale, "carol", nil)
	rdb.ZAdd(ctx, contract.RoomLiveKey(r.Sale), redisZ("bob", time.UnixMilli(1)))
	testenv.WaitFor(t, 5*time.Second, "alice's admission", func() bool {
		poll(t, gw, r.Sale, "carol", carol.Ticket)
		return poll(t, gw, r.Sale, "alice", alice.Ticket).State == "admitted"
	})
	if p := poll(t, gw, r.Sale, "carol", carol.Ticket); p.State != "waiting" {
		t.Fatalf("carol: %s, want waiting behind alice", p.Raw)
	}
}

// The front from memory: with the default settings a waiter whose place the
// summary's cursor has not reached is answered from the gateway's memory, the front
// included, while the front moves; only the poll that finds its place inside the cursor (his
// admission) asks Redis, once per waiter here since an admitted waiter stops polling, as the
// page does. So the commands naming the room are at most the gateway's ticks (one per
// summary_interval) plus one per admitted waiter, however many polls; the run logs the
// commands per poll (the benchmark's target is 0.05).
var frontMemoryGateway = gateway(gatewayConfig{Room: map[string]any{"cache_ttl": "10m", "summary_interval": "1s"}})

func TestTheFrontIsAnsweredFromMemoryAndAsksRedisAboutOncePerWaiter(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := frontMemoryGateway.Base(t)
	r := newRoom(t, rdb, 100, -time.Second, time.Hour, roomArgs{Rate: "2", Oversubscribe: "1", SessionMS: "60000"})
	const waiters = 12
	tickets := map[string]string{}
	for i := range waiters {
		u := fmt.Sprintf("f%02d", i)
		a := enter(t, gw, r.Sale, u, nil)
		if a.Status != 200 || a.Ticket == "" {
			t.Fatalf("enter %s: %s", u, a.Raw)
		}
		tickets[u] = a.Ticket
	}
	before, _ := rdb.HGet(context.Background(), contract.RoomKey(r.Sale), "admitted").Int64()
	marker := "seckill:{sale:" + r.Sale + "}:room:marker"
	m := startMonitor(t, contract.RoomKey(r.Sale), marker)
	began := time.Now()
	polls, admitted := 0, map[string]bool{}
	for len(admitted) < 4 && time.Since(began) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
		for u, tk := range tickets {
			if admitted[u] {
				continue
			}
			p := poll(t, gw, r.Sale, u, tk)
			polls++
			switch {
			case p.State == "admitted":
				admitted[u] = true
			case p.Status != 200 || p.State != "waiting" || p.Position < 1:
				t.Fatalf("poll of %s: %d %s", u, p.Status, p.Raw)
			}
			if p.Ticket != "" {
				tickets[u] = p.Ticket // the client keeps the newest ticket, as the page does
			}
		}
	}
	elapsed := time.Since(began)
	testenv.WaitFor(t, 10*time.Second, "the monitor to see a marker sent after the polls", func() bool {
		rdb.Exists(context.Background(), marker)
		return m.marked.Load()
	})
	after, _ := rdb.HGet(context.Background(), contract.RoomKey(r.Sale), "admitted").Int64()
	if after-before < 2 || len(admitted) < 4 {
		t.Fatalf("the front did not move: %d admissions during the run, %d waiters heard theirs", after-before, len(admitted))
	}
	ticks := int64(math.Ceil(elapsed.Seconds())) + 1
	got := m.count.Load()
	t.Logf("%d polls in %v, %d waiters admitted: %d commands naming the room, %.3f per poll (ticks at most %d)",
		polls, elapsed, len(admitted), got, float64(got)/float64(polls), ticks)
	if want := ticks + int64(len(admitted)); got > want {
		t.Fatalf("%d commands naming the room, want at most %d (the ticks, and one poll per admitted waiter)", got, want)
	}
}
