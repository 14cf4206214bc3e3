//go:build integration

package draw

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A person on the entry page, with a real proof of work: enters for a size, changes it,
// withdraws and enters again, keeping one entry id throughout; then sees the draw's result.
// The draw's public result names a beacon (docs/draw.md, "A public beacon"): the page says so.
var beaconGateway = gateway(gatewayConfig{Result: `{"state":"open","seed_commitment":"` + strings.Repeat("ab", 32) + `","randomness":"commit-reveal+drand",` +
	`"beacon":{"chain_hash":"52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971","public_key":"00","scheme":"bls-unchained-g1-rfc9380","period":3,"genesis_time":1692803367,"round":123}}`})

func TestEntryPageInARealBrowserEntersChangesWithdrawsEntersAgainAndSeesTheWin(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	gw := beaconGateway.Base(t)
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"42": 1, "43": 1, "44": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour, DMin: 8, DMax: 8})

	ctx := pagetest.Context(t, time.Minute)
	text := func(id string) string { return pagetest.TextIn(t, ctx, id) }
	state := func() string { return pagetest.StateIn(t, ctx) }
	waitFor := func(want string) {
		t.Helper()
		for s := state(); s != want; s = state() {
			if ctx.Err() != nil {
				t.Fatalf("the page is %q, want %q (problem: %q)", s, want, text("problem"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitText := func(id, want string) {
		t.Helper()
		for s := text(id); !strings.Contains(s, want); s = text(id) {
			if ctx.Err() != nil {
				t.Fatalf("#sk-%s is %q, want %q (problem: %q)", id, s, want, text("problem"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	click := func(id string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID("sk-"+id))); err != nil {
			t.Fatalf("click #sk-%s: %v", id, err)
		}
	}
	pick := func(v string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.SetValue(chromedp.ID("sk-size"), v)); err != nil {
			t.Fatalf("pick %s: %v", v, err)
		}
	}

	if _, err := chromedp.Run(ctx, chromedp.Navigate(gw+"/seckill/"+sale+"/draw?user=alice")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	waitFor("none")
	waitText("randomness", "drand round 123")
	pick("43")
	click("enter")
	waitFor("entered")
	id := text("entry")
	if len(id) != 8 || !strings.Contains(text("status"), "size 43.") {
		t.Fatalf("after entering: entry %q, the page says %q", id, text("status"))
	}
	// The proof of work was shown as progress, to the end.
	if work, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sk-work").getAttribute("aria-valuenow")`)); work != "100" {
		t.Fatalf("the proof of work's bar stands at %q, want 100", work)
	}

	pick("44")
	click("change")
	waitText("status", "Your size is now 44.")
	if text("entry") != id || state() != "entered" {
		t.Fatalf("after changing size: entry %q (was %q), state %q", text("entry"), id, state())
	}

	click("withdraw")
	waitFor("withdrawn")

	pick("42")
	click("enter")
	waitFor("entered")
	if text("entry") != id || !strings.Contains(text("status"), "size 42.") {
		t.Fatalf("after entering again: entry %q (was %q), the page says %q", text("entry"), id, text("status"))
	}
	if v := rdb.HGet(context.Background(), contract.DrawEntriesKey(sale), "alice").Val(); v != id+":42" {
		t.Fatalf("Redis has alice's entry as %q, want %s:42", v, id)
	}

	// The draw: alice is first of size 42, in wave 1 until an hour from now.
	rdb.HSet(context.Background(), contract.DrawEntriesKey(sale), "alice", id+":42:0")
	rdb.HSet(context.Background(), contract.DrawKey(sale), "state", "drawn")
	rdb.HSet(context.Background(), contract.MetaKey(sale), "w:42", "1:0:1:"+itoa(time.Now().Add(time.Hour).UnixMilli()))
	if _, err := chromedp.Run(ctx, chromedp.Reload()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitFor("won")
	waitText("timer", "Time left to buy: ")
	if text("rank") != "1" || text("wave") != "1" || !strings.HasPrefix(text("status"), "You won size 42! Buy it before ") {
		t.Fatalf("the win shows rank %q wave %q, says %q", text("rank"), text("wave"), text("status"))
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("sk-enter").hidden && document.getElementById("sk-withdraw").hidden`))
	if err != nil || !hidden {
		t.Fatalf("after the draw the page must offer neither entering nor withdrawing (%v)", err)
	}
}
