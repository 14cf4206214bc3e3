//go:build integration

package draw

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
)

// protocolDraw answers the draw page's requests as docs/openapi.yaml says the draw answers
// them, with the entry a test sets: a page test of every state without running a real draw
// through each (the draw's own tests, and TestEntryPageInARealBrowser..., cover the draw).
// The page is the handler's kit with the options under test; the proof of work is checked.
type protocolDraw struct {
	kit    *pagekit.Kit
	work   pagetest.Work
	mu     sync.Mutex
	entry  map[string]any // nil: not entered
	result map[string]any
}

var testSizes = []string{"S", "M", "L"}

func newProtocolDraw(t *testing.T, cfg *pagekit.Config) *protocolDraw {
	open := map[string]any{"state": "open", "seed_commitment": "5eed0c0ffee",
		"closes_at": time.Now().Add(26 * time.Hour).UTC().Format(time.RFC3339), "randomness": "commit-reveal", "beacon": nil}
	return &protocolDraw{kit: pagetest.Compile(t, pageKind, cfg), work: pagetest.NewWork(16), result: open}
}

func (p *protocolDraw) set(entry map[string]any, result map[string]any) {
	p.mu.Lock()
	p.entry = entry
	if result != nil {
		p.result = result
	}
	p.mu.Unlock()
}

func (p *protocolDraw) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, body any) { pagetest.Answer(w, status, body) }
	p.mu.Lock()
	defer p.mu.Unlock()
	switch path := r.URL.Path; {
	case path == "/seckill/s1/draw" && r.Method == "GET" && strings.Contains(r.Header.Get("Accept"), "text/html"):
		_ = p.kit.Serve(w, r, "s1", testSizes, nil)
	case path == "/seckill/s1/challenge":
		p.work.Issue(w)
	case path == "/seckill/s1/draw" && r.Method == "POST":
		if !p.work.Solved(r) {
			pagetest.Refuse(w, 403, "invalid_challenge")
			return
		}
		var body struct{ Variant string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.entry = map[string]any{"entry_id": "e-7f3a", "state": "entered", "variant": body.Variant, "variants": testSizes}
		reply(200, map[string]any{"entry_id": "e-7f3a", "state": "entered", "variant": body.Variant})
	case path == "/seckill/s1/draw" && r.Method == "DELETE":
		p.entry = map[string]any{"entry_id": "e-7f3a", "state": "withdrawn", "variants": testSizes}
		reply(200, map[string]any{"state": "withdrawn"})
	case path == "/seckill/s1/draw" && r.Method == "GET":
		if p.entry == nil {
			pagetest.Refuse(w, 404, "not_entered")
			return
		}
		reply(200, p.entry)
	case path == "/seckill/s1/draw/result":
		reply(200, p.result)
	default:
		pagetest.Refuse(w, 404, "not_found")
	}
}

// A phone's buyer who changed the size presses Withdraw next: the proof of work's bar above
// the buttons goes a moment after the work ends, and it must keep its place when it does, or
// the buttons move up under the finger and the tap lands between two of them (in German the
// buttons take two rows). The bar out of sight still takes its height, and Withdraw is where it
// was when the page said the size was changed.
func TestTheDrawPagesButtonsStayPutWhenTheWorkEnds(t *testing.T) {
	t.Parallel()
	p := newProtocolDraw(t, nil)
	site := pagetest.Serve(t, p)
	tab := pagetest.NewBrowser(t).Tab(t, "de-DE,de;q=0.9", 390, 844, true)
	tab.Go(site + "/seckill/s1/draw")
	tab.WaitState("none")
	tab.Click("enter")
	tab.WaitState("entered")
	rect := `JSON.stringify(document.getElementById("sk-withdraw").getBoundingClientRect())`
	pagetest.JS[bool](tab, `(() => { document.getElementById("sk-size").value = "M"; document.getElementById("sk-change").click(); return true; })()`)
	tab.WaitText("status", pagetest.Say(p.kit, "de", "draw.changed", "size", "M"))
	said := pagetest.JS[string](tab, rect)
	for deadline := time.Now().Add(10 * time.Second); pagetest.JS[bool](tab, `document.getElementById("sk-work").checkVisibility({visibilityProperty: true})`); {
		if time.Now().After(deadline) {
			t.Fatal("the bar is still in sight 10 s after the work ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h := pagetest.JS[float64](tab, `document.getElementById("sk-work").getBoundingClientRect().height`); h == 0 {
		t.Error("the finished bar gave up its place")
	}
	if after := pagetest.JS[string](tab, rect); after != said {
		t.Errorf("Withdraw moved when the bar went: %s, then %s", said, after)
	}
	tab.Click("withdraw")
	tab.WaitState("withdrawn")
}

// prefix is a message up to its first placeholder.
func prefix(s string) string { p, _, _ := strings.Cut(s, "{"); return p }

// The draw page goes through every state of an entry, in sentences of the buyer's language,
// with no serious or critical accessibility violation in any (axe-core), in English with our
// page and in German with a shop's template and words (every language of ours:
// TestTheDrawPageInEveryLanguageFitsAPhoneAndPassesAxe): not entered, entered
// (with the proof of work's progress), the size changed, won (the claim deadline counting
// down, the title changed, the rank behind "Check this draw"), lost, and won but the claim
// expired.
func TestTheDrawPageShowsEveryStateInPlainWordsAndPassesAxe(t *testing.T) {
	t.Parallel()
	b := pagetest.NewBrowser(t)
	for _, pc := range []pagetest.Case{
		{Name: "en", AcceptLanguage: "en-GB,en;q=0.9", Lang: "en"},
		{Name: "shop-de", AcceptLanguage: "de-CH,de;q=0.9", Lang: "de", Cfg: pagetest.Shop(), Shop: "Die Verlosung von Alpenschuh"},
	} {
		t.Run(pc.Name, func(t *testing.T) {
			t.Parallel() // a draw of its own
			p := newProtocolDraw(t, pc.Cfg)
			site := pagetest.Serve(t, p)
			msg := func(key string, kv ...string) string { return pagetest.Say(p.kit, pc.Lang, key, kv...) }
			open := func(t *testing.T) *pagetest.Tab { return pc.Open(t, b, site+"/seckill/s1/draw") }

			t.Run("entered and changed size", func(t *testing.T) {
				p.set(nil, nil)
				tab := open(t)
				tab.WaitState("none")
				if got := tab.Text("status"); got != msg("draw.none") {
					t.Errorf("not entered: %q", got)
				}
				tab.WaitText("closes", prefix(msg("draw.closes")))
				tab.Axe("not entered")
				pagetest.JS[bool](tab, `(() => { document.getElementById("sk-size").value = "S"; return true; })()`)
				tab.Click("enter")
				tab.WaitState("entered")
				if got := tab.Text("status"); got != msg("draw.entered", "size", "S") {
					t.Errorf("entered: %q, want %q", got, msg("draw.entered", "size", "S"))
				}
				checking := prefix(msg("common.checking"))
				var progress []string
				for _, s := range tab.Said() {
					if strings.HasPrefix(s, checking) {
						progress = append(progress, strings.TrimPrefix(s, checking))
					}
				}
				if len(progress) < 2 || !strings.Contains(progress[0], "25") || !strings.Contains(progress[len(progress)-1], "100") {
					t.Errorf("the proof of work was shown as %q, want 25 %% ... 100 %%", progress)
				}
				tab.Axe("entered")
				// Picked and pressed in one turn of the page's loop: an entered page puts its
				// entry's size back in the picker on each answer it gets while idle.
				pagetest.JS[bool](tab, `(() => { document.getElementById("sk-size").value = "M"; document.getElementById("sk-change").click(); return true; })()`)
				tab.WaitText("status", msg("draw.changed", "size", "M"))
				if got := tab.Text("entry"); got != "e-7f3a" {
					t.Errorf("Check this draw shows the entry %q", got)
				}
				tab.Axe("changed size")
			})

			drawn := map[string]any{"state": "drawn", "seed_commitment": "5eed0c0ffee", "seed": "5eed", "entries": 1234, "entries_root": "r00t",
				"randomness": "drand", "beacon": map[string]any{"round": 123, "chain_hash": "52db9ba70e0c", "genesis_time": 1, "period": 3}}
			t.Run("won", func(t *testing.T) {
				p.set(map[string]any{"entry_id": "e-7f3a", "state": "won", "variant": "M", "rank": 3, "wave": 1,
					"claim_until": time.Now().Add(115 * time.Second).UTC().Format(time.RFC3339), "variants": testSizes}, drawn)
				tab := open(t)
				tab.WaitState("won")
				if got := tab.Text("status"); !strings.HasPrefix(got, prefix(msg("draw.won"))) || !strings.Contains(got, "M") {
					t.Errorf("won: %q", got)
				}
				tab.WaitText("timer", prefix(msg("draw.claim_left")))
				if timer := tab.Text("timer"); !strings.Contains(timer, "1:5") && !strings.Contains(timer, "1:4") {
					t.Errorf("the claim deadline reads %q, want about 1:5x", timer)
				}
				if title := pagetest.JS[string](tab, `document.title`); !strings.HasPrefix(title, prefix(msg("draw.title_won"))) {
					t.Errorf("the title %q does not say you won", title)
				}
				if tab.Visible("enter") || tab.Visible("withdraw") {
					t.Errorf("after the draw the page offers to enter or withdraw")
				}
				pagetest.JS[bool](tab, `document.getElementById("sk-check").open = true`)
				if got := tab.Text("rank"); got != "3" {
					t.Errorf("Check this draw shows the rank %q", got)
				}
				tab.WaitText("randomness", "123")
				tab.WaitText("closes", "1")
				tab.Axe("won")
			})
			for _, c := range []struct{ state, key string }{{"lost", "draw.lost"}, {"expired", "draw.expired"}} {
				t.Run(c.state, func(t *testing.T) {
					p.set(map[string]any{"entry_id": "e-7f3a", "state": c.state, "variant": "M", "rank": 900, "variants": testSizes}, drawn)
					tab := open(t)
					tab.WaitState(c.state)
					if got := tab.Text("status"); got != msg(c.key) {
						t.Errorf("%s: %q, want %q", c.state, got, msg(c.key))
					}
					tab.HidesCodes(c.state, c.state+"\n")
					tab.Axe(c.state)
				})
			}
		})
	}
}

// The draw page as docs/room.md shows it: desktop and phone (390x844), a won entry.
// SECKILL_SCREENSHOTS=<dir> (make screenshots) writes them there.
func TestScreenshotsOfTheDrawPage(t *testing.T) {
	dir, b := pagetest.ScreenshotBrowser(t)
	p := newProtocolDraw(t, nil)
	site := pagetest.Serve(t, p)
	p.set(map[string]any{"entry_id": "e-7f3a", "state": "won", "variant": "M", "rank": 3, "wave": 1,
		"claim_until": time.Now().Add(20 * time.Minute).UTC().Format(time.RFC3339), "variants": testSizes},
		map[string]any{"state": "drawn", "seed_commitment": "5eed0c0ffee", "entries": 12873, "randomness": "commit-reveal"})
	for _, s := range pagetest.Screens {
		tab := b.TabOn(t, "en-US", s)
		tab.Go(site + "/seckill/s1/draw")
		tab.WaitState("won")
		tab.WaitText("timer", ":")
		tab.Screenshot(s.File(dir, "draw-won"))
	}
}
