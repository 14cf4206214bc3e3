//go:build integration

package room

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// "first" never claims his admission: with the default claim window (seconds) the room would
// judge him a no-show and admit alice while Chromium is still starting on a loaded machine.
// The test ends his admission itself.
var browserGateway = gateway(gatewayConfig{Room: map[string]any{"claim_window": "10m"}})

func TestWaitingPageInARealBrowserEntersWaitsLeavesEntersAgainIsAdmittedAndBuys(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := browserGateway.Base(t)
	// One live admission at a time (1 unit x 1), and a real proof of work.
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "8", DifficultyMax: "8"})
	// Someone entered first and holds the only admission: the browser's user waits until the
	// test makes it lapse.
	c := do(t, "GET", gw+"/seckill/"+r.Sale+"/challenge", "first", nil)
	first := enter(t, gw, r.Sale, "first", map[string]string{sealed.HeaderChallenge: c.Challenge, sealed.HeaderSolution: sealed.Solve(c.Challenge, c.Difficulty)})
	if first.State != "admitted" {
		t.Fatalf("first in line: %s", first.Raw)
	}

	ctx := pagetest.Context(t, time.Minute)

	var states []string
	var position string
	text := func(id string) string { return pagetest.TextIn(t, ctx, id) }
	if _, err := chromedp.Run(ctx, chromedp.Navigate(gw+"/seckill/"+r.Sale+"/queue?user=alice")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	// Watch the state until the Buy button appears. The first time alice waits she leaves the
	// queue and enters again; the second time the first admission runs out.
	waitFor := func(want string) {
		t.Helper()
		for s := pagetest.StateIn(t, ctx); s != want; s = pagetest.StateIn(t, ctx) {
			if ctx.Err() != nil {
				t.Fatalf("the page is %q, want %q (states seen %v)", s, want, states)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var waitText string
	left := false
	for {
		s := pagetest.StateIn(t, ctx)
		if len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
		if s == "waiting" && !left {
			left = true
			waitText = text("wait")
			if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID("sk-leave"))); err != nil {
				t.Fatalf("click Leave: %v", err)
			}
			waitFor("left")
			states = append(states, "left")
			if n := rdb.ZCard(context.Background(), contract.RoomQueueKey(r.Sale)).Val(); n != 1 {
				t.Fatalf("%d places in Redis after alice left, want 1 (first's)", n)
			}
			if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID("sk-rejoin"))); err != nil {
				t.Fatalf("click Enter again: %v", err)
			}
			waitFor("waiting")
			states = append(states, "waiting")
			continue
		}
		if s == "waiting" && position == "" {
			// The title shows the place ("#1 in line — Waiting room").
			position, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`))
			// The first admission runs out (what a lapse looks like to room_queue.lua).
			rdb.ZAdd(context.Background(), contract.RoomLiveKey(r.Sale), redis.Z{Score: 1, Member: "first"})
		}
		hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("sk-buy").hidden`))
		if err != nil {
			t.Fatalf("browser: %v (states seen %v)", err, states)
		}
		if !hidden {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID("sk-buy"))); err != nil {
		t.Fatalf("click Buy: %v", err)
	}
	var order, status string
	for order = text("order"); len(order) < 6; order = text("order") {
		time.Sleep(50 * time.Millisecond)
	}
	waitFor("bought")
	status = text("status")
	// What the proof of work costs this browser: SHA-256 attempts per second, as the page's
	// worker makes them (docs/room.md turns it into seconds per difficulty). The worker runs
	// the client's own search (searchCounters of clients/js/seckill.js, taken from the page's
	// script): here at a difficulty nothing reaches, so it tries every counter it is given.
	rate, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
		const s = document.scripts[0].textContent;
		const i = s.indexOf("function searchCounters("), j = s.indexOf("\n}\n", i) + 2;
		const src = "const search = " + s.slice(i, j) + ";\n" +
			"onmessage = () => { const n = 200000, t0 = performance.now(); search('c1.k1.x.16.AAAAAAAAAAAAAAAAAAAAAA.mac', 256, 0, n); postMessage(n / ((performance.now() - t0) / 1000)); };";
		const w = new Worker(URL.createObjectURL(new Blob([src], { type: "text/javascript" })));
		return new Promise((resolve, reject) => { w.onmessage = (e) => { w.terminate(); resolve(e.data); }; w.onerror = (e) => reject(new Error(e.message)); w.postMessage(0); });
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("measuring the browser's hash rate: %v", err)
	}
	t.Logf("chromium: %.0f SHA-256 attempts per second in the page", rate)
	if got := strings.TrimPrefix(strings.Join(states, ","), "entering,"); got != "waiting,left,waiting,admitted" {
		t.Fatalf("the page went through %v, want waiting, left, waiting again, then admitted", states)
	}
	// The estimate is a range in words: "Estimated wait: 0–1 seconds."
	if !strings.HasPrefix(waitText, "Estimated wait: ") || !strings.Contains(waitText, "second") {
		t.Fatalf("the waiting page showed the wait %q, want a range", waitText)
	}
	if !strings.HasPrefix(position, "#1 in line") {
		t.Fatalf("the waiting page's title is %q, want position 1", position)
	}
	if status != "Your order is placed. Order number: "+order+"." || len(order) < 6 {
		t.Fatalf("after Buy: order %q, the page says %q, want the order placed (202)", order, status)
	}
	// The purchase is in the sale's outbox: the gate accepted it.
	if n := rdb.HLen(context.Background(), "seckill:{sale:"+r.Sale+"}:buyers").Val(); n != 1 {
		t.Fatalf("%d buyers in Redis, want 1", n)
	}
}
