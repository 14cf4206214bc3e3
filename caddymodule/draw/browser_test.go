package draw

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// chromium finds Debian's headless browser. Missing, the test fails: scripts/stack.sh
// install_missing installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install it (apt-get install -y chromium, or scripts/stack.sh install_missing)")
	return ""
}

// A person on the entry page, with a real proof of work: enters for a size, changes it,
// withdraws and enters again, keeping one entry id throughout; then sees the draw's result.
func TestEntryPageInARealBrowserEntersChangesWithdrawsEntersAgainAndSeesTheWin(t *testing.T) {
	bin := chromium(t)
	rdb := testenv.Redis(t)
	gcfg := newGatewayConfig(t)
	// The draw's public result names a beacon (docs/draw.md, "A public beacon"): the page says so.
	gcfg.Result = `{"state":"open","seed_commitment":"` + strings.Repeat("ab", 32) + `","randomness":"commit-reveal+drand",` +
		`"beacon":{"chain_hash":"52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971","public_key":"00","scheme":"bls-unchained-g1-rfc9380","period":3,"genesis_time":1692803367,"round":123}}`
	gw := startCaddy(t, gcfg)
	sale := newDraw(t, rdb, drawArgs{Variants: map[string]int{"42": 1, "43": 1, "44": 1}, OpensIn: -time.Minute, ClosesIn: time.Hour, DMin: 8, DMax: 8})

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	text := func(id string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("reading #%s: %v", id, err)
		}
		return v
	}
	waitFor := func(id, want string) {
		t.Helper()
		for s := text(id); s != want; s = text(id) {
			if ctx.Err() != nil {
				t.Fatalf("#%s is %q, want %q (note: %q)", id, s, want, text("note"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	click := func(id string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.ID(id))); err != nil {
			t.Fatalf("click #%s: %v", id, err)
		}
	}
	pick := func(v string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.SetValue(chromedp.ID("size"), v)); err != nil {
			t.Fatalf("pick %s: %v", v, err)
		}
	}

	if _, err := chromedp.Run(ctx, chromedp.Navigate(gw+"/seckill/"+sale+"/draw?user=alice")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	waitFor("state", "none")
	for s := text("randomness"); !strings.Contains(s, "drand round 123 of chain 52db9ba70e0c…"); s = text("randomness") {
		if ctx.Err() != nil {
			t.Fatalf("#randomness is %q, want the beacon's round", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pick("43")
	click("enter")
	waitFor("state", "entered")
	id := text("entry")
	if len(id) != 8 || text("variant") != "43" {
		t.Fatalf("after entering: entry %q size %q", id, text("variant"))
	}
	// The proof of work is shown as progress: attempts against the expected 2^8.
	if work := text("attempts"); !strings.HasPrefix(work, "done: ") || !strings.Contains(work, "(about 256 expected)") {
		t.Fatalf("the page shows its proof of work as %q, want done: <n> attempts (about 256 expected)", work)
	}

	pick("44")
	click("change")
	waitFor("variant", "44")
	if text("entry") != id || text("state") != "entered" {
		t.Fatalf("after changing size: entry %q (was %q), state %q", text("entry"), id, text("state"))
	}

	click("withdraw")
	waitFor("state", "withdrawn")

	pick("42")
	click("enter")
	waitFor("state", "entered")
	if text("entry") != id || text("variant") != "42" {
		t.Fatalf("after entering again: entry %q (was %q), size %q", text("entry"), id, text("variant"))
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
	waitFor("state", "won")
	if text("rank") != "1" || text("wave") != "1" || text("until") == "–" {
		t.Fatalf("the win shows rank %q wave %q deadline %q", text("rank"), text("wave"), text("until"))
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("enter").hidden && document.getElementById("withdraw").hidden`))
	if err != nil || !hidden {
		t.Fatalf("after the draw the page must offer neither entering nor withdrawing (%v)", err)
	}
}
