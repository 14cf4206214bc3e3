//go:build integration

package room

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The waiting page shows its proof of work as progress (attempts against the expected
// 2^difficulty), and the work it did is accepted although the difficulty rose between the
// challenge and the entry. The browser's POST /queue is held (the Fetch
// domain) while the test makes the room look rushed in Redis and waits for the gateway to
// issue harder challenges; then the entry goes on and is admitted.
var powGateway = gateway(gatewayConfig{Room: map[string]any{"difficulty_rate": 1}})

func TestWaitingPageShowsTheWorkAsProgressAndIsAdmittedAfterADifficultyRise(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := powGateway.Base(t)
	// 12 bits while quiet (4 096 attempts expected), up to 20 in a rush.
	r := newRoom(t, rdb, 1, -time.Second, time.Hour, roomArgs{Rate: "100", Oversubscribe: "1", SessionMS: "60000", DifficultyMin: "12", DifficultyMax: "20"})

	ctx := pagetest.Context(t, time.Minute)

	// Hold the page's entry (POST /queue); let everything else through.
	entries := make(chan *fetch.EventRequestPaused, 4)
	if err := chromedp.Listen(ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		if e.Request.Method == http.MethodPost && strings.Contains(e.Request.URL, "/queue") {
			entries <- e
			return
		}
		go func() {
			_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
		}()
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}}); err != nil {
		t.Fatalf("fetch.Enable: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(gw+"/seckill/"+r.Sale+"/queue?user=alice")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	text := func(id string) string { return pagetest.TextIn(t, ctx, id) }

	var held *fetch.EventRequestPaused
	select {
	case held = <-entries:
	case <-ctx.Done():
		t.Fatalf("the page never entered; it says %q, problem %q", text("status"), text("problem"))
	}
	// The work is done and shown as such: "Checking your browser — 100%", the bar full.
	if work := text("status"); work != "Checking your browser — 100%" {
		t.Fatalf("the page shows its proof of work as %q, want Checking your browser — 100%%", work)
	}
	value, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sk-work").getAttribute("aria-valuenow")`))
	if err != nil || value != "100" {
		t.Fatalf("the progress bar stands at %v (%v), want 100 once the work is done", value, err)
	}
	// The entry is the JavaScript client's (clients/js/seckill.js, inlined in the page): it
	// asks for JSON on every request, which the page's own code never did.
	if accept, _ := held.Request.Headers["Accept"].(string); accept != "application/json" {
		t.Fatalf("the page's entry asks for %q, want the client's application/json", accept)
	}
	ch := held.Request.Headers[sealed.HeaderChallenge]
	if ch == nil {
		ch = held.Request.Headers[strings.ToLower(sealed.HeaderChallenge)]
	}
	if s, _ := ch.(string); !strings.Contains(s, ".12.") {
		t.Fatalf("the page's challenge %v is not the quiet room's 12 bits", ch)
	}

	// A rush, as room_queue.lua counts it: 1 000 entries this second and the last.
	sec := redisNow(t, rdb).Unix()
	rdb.HSet(context.Background(), contract.RoomKey(r.Sale), "rate_s", sec, "rate_cur", 1000, "rate_prev", 1000)
	testenv.WaitFor(t, 10*time.Second, "the gateway to issue harder challenges", func() bool {
		c := do(t, http.MethodGet, gw+"/seckill/"+r.Sale+"/challenge", fmt.Sprintf("probe%d", time.Now().UnixNano()), nil)
		return c.Status == 200 && c.Difficulty > 12
	})
	if _, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held.RequestID}); err != nil {
		t.Fatalf("letting the entry go: %v", err)
	}
	// Admitted at once: no refusal shown, no second proof of work.
	for deadline := time.Now().Add(20 * time.Second); pagetest.StateIn(t, ctx) != "admitted"; time.Sleep(50 * time.Millisecond) {
		if note := text("problem"); note != "" {
			t.Fatalf("the page showed a refusal %q after its work, want an admission", note)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page is in state %q, saying %q, want admitted", pagetest.StateIn(t, ctx), text("status"))
		}
	}
}
