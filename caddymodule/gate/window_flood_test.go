//go:build integration

package gate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Once a gateway has heard the script answer not_started (or ended), with the window in the
// answer, a click clearly outside the window is answered from memory before the throttle's
// zones reach Redis: N clicks cost Redis nothing and get the script's own 403 and code. A
// click within a second of the opening is decided by Redis, and a window event
// ("window:<sale>", the backend's window control) makes the gateway ask again.
func TestClicksOutsideTheWindowAreAnsweredFromMemoryAndTheEdgeByRedis(t *testing.T) {
	rs := testenv.StartRedis(t) // private: its commandstats are this test's alone
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	ports := [2]int{testenv.FreePort(t), testenv.FreePort(t)}
	cfg := twinGatewaysConfig(t, rs.Addr(), testenv.ID("wf"), ports, 1000, 0)
	gw := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	handlertest.StartCaddy(t, cfg, gw)
	ctx := context.Background()

	// learn clicks until one costs Redis nothing (the gateway's event subscription may come up
	// after its first click: a window heard before that is not kept), each answered want.
	learn := func(sale, code string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			before, _ := commands(t, rdb)
			r := purchase(t, gw, sale, testenv.ID("u"))
			if r.Status != 403 || r.Code != code {
				t.Fatalf("a click: %+v, want 403 %s", r, code)
			}
			if after, _ := commands(t, rdb); after == before {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gateway never answered %s from memory", code)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	flood := func(sale, code string) {
		t.Helper()
		all0, by0 := commands(t, rdb)
		for range 20 {
			if r := purchase(t, gw, sale, testenv.ID("u")); r.Status != 403 || r.Code != code {
				t.Fatalf("a click: %+v, want 403 %s", r, code)
			}
		}
		if all1, by1 := commands(t, rdb); all1 != all0 {
			t.Fatalf("20 clicks answered %s ran %v in Redis, want nothing", code, delta(by0, by1))
		}
	}

	early := newSale(t, rdb, 10, time.Hour, 2*time.Hour)
	learn(early, "not_started")
	flood(early, "not_started")
	ended := newSale(t, rdb, 10, -2*time.Hour, -time.Minute)
	learn(ended, "ended")
	flood(ended, "ended")

	// The backend opens the early sale now: the window event makes the gateway ask Redis, which
	// sells.
	now := time.Now().UnixMilli()
	rdb.HSet(ctx, contract.MetaKey(early), "starts_ms", now-1000)
	rdb.Publish(ctx, contract.EventsChannel, contract.EventWindow+":"+early)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := purchase(t, gw, early, testenv.ID("u"))
		if r.Status == 202 {
			break
		}
		if r.Status != 403 || r.Code != "not_started" || time.Now().After(deadline) {
			t.Fatalf("a click after the window moved: %+v, want 202 once the event is heard", r)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A sale opening within the margin: every click goes to the script (not_started or, once
	// open, accepted), none is answered from memory.
	edge := newSale(t, rdb, 100, 500*time.Millisecond, time.Hour)
	for i := range 5 {
		before := scriptCalls(t, rdb)
		r := purchase(t, gw, edge, testenv.ID("u"))
		if r.Status != 202 && (r.Status != 403 || r.Code != "not_started") {
			t.Fatalf("click %d at the opening: %+v, want 202 or 403 not_started", i, r)
		}
		if scriptCalls(t, rdb) != before+1 {
			t.Fatalf("click %d at the opening (%+v) ran no script: it must be Redis's to decide", i, r)
		}
	}
}
