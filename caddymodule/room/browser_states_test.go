//go:build integration

package room

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// protocolRoom answers the waiting page's requests as docs/openapi.yaml says the room, the
// token and the gate answer them, with the answers a test sets: a page test of every state
// without making a real room go through each of them (the real room's own tests, and
// TestWaitingPageInARealBrowser..., cover the room). The page itself is the handler's
// (pageKind, with the page options under test). The proof of work is checked for real.
type protocolRoom struct {
	kit       *pagekit.Kit
	work      pagetest.Work
	mu        sync.Mutex
	enter     func() (int, string, any) // status, Retry-After, body of POST /queue
	answer    any                       // the body of each poll
	polls     int                       // GET /queue with a ticket
	roomReads int                       // GET /room
	// hold, when set, keeps each POST /queue waiting until it is closed (the page stays in
	// "entering", its work done); held counts the requests it has kept.
	hold chan struct{}
	held int
}

func newProtocolRoom(t *testing.T, cfg *pagekit.Config) *protocolRoom {
	return &protocolRoom{kit: pagetest.Compile(t, pageKind, cfg), work: pagetest.NewWork(16)}
}

func (p *protocolRoom) set(answer any) {
	p.mu.Lock()
	p.answer = answer
	p.mu.Unlock()
}

func (p *protocolRoom) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, body any) { pagetest.Answer(w, status, body) }
	refuse := func(status int, code string) { pagetest.Refuse(w, status, code) }
	p.mu.Lock()
	if hold := p.hold; hold != nil && r.Method == "POST" && r.URL.Path == "/seckill/s1/queue" {
		p.held++
		p.mu.Unlock()
		<-hold
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	soon := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	switch path := r.URL.Path; {
	case path == "/seckill/s1/queue" && r.Method == "GET" && r.Header.Get(sealed.HeaderTicket) == "":
		_ = p.kit.Serve(w, r, "s1", nil, nil)
	case path == "/seckill/s1/challenge":
		p.work.Issue(w)
	case path == "/seckill/s1/queue" && r.Method == "POST":
		if !p.work.Solved(r) {
			refuse(403, "invalid_challenge")
			return
		}
		status, retry, body := p.enter()
		if retry != "" {
			w.Header().Set("Retry-After", retry)
		}
		reply(status, body)
	case path == "/seckill/s1/queue" && r.Method == "GET":
		p.polls++
		reply(200, p.answer)
	case path == "/seckill/s1/queue" && r.Method == "DELETE":
		reply(200, map[string]any{"state": "left", "refresh_s": 1})
	case path == "/seckill/s1/token":
		reply(200, map[string]any{"token": "tok-1", "expires_at": soon(time.Minute)})
	case path == "/seckill/s1/buy":
		if r.Header.Get("X-Seckill-Token") != "tok-1" {
			refuse(403, "invalid_token")
			return
		}
		reply(202, map[string]any{"order_id": "o-42", "status": "queued"})
	case path == "/orders/o-42":
		reply(200, map[string]any{"order_id": "o-42", "sale_id": "s1", "status": "created"})
	case path == "/seckill/s1/room":
		p.roomReads++
		reply(200, map[string]any{"sale": "s1", "state": "open", "seed_commitment": "5eed0c0ffee"})
	default:
		refuse(404, "not_found")
	}
}

func waiting(position int) map[string]any {
	return map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "waiting", "position": position, "ahead": position - 1,
		"estimated_wait_s": 30, "estimated_wait_range_s": []int{20, 40}, "refresh_s": 1, "units_left": 12}
}

func pageCases() []pagetest.Case {
	return []pagetest.Case{
		{Name: "en", AcceptLanguage: "en-US,en;q=0.9", Lang: "en"},
		{Name: "shop-de", AcceptLanguage: "de-DE,de;q=0.9", Lang: "de", Cfg: pagetest.Shop(), Shop: "Willkommen in der Schlange von Alpenschuh"},
	}
}

// The waiting page goes through every state a buyer can meet, in sentences of the buyer's
// language, with no serious or critical accessibility violation in any (axe-core), in
// English with our page and in German with a shop's template and words (every language of
// ours: TestTheWaitingPageInEveryLanguageFitsAPhoneAndPassesAxe):
// entering with the proof of work's progress, waiting (position, a bar, a wait range),
// admitted (a Buy button, the time left counting down, the title changed), bought (the order
// number; the entry id and the seed commitment behind "Check this queue"), sold out, ended,
// paused, and the room full (try again in N seconds). The two pages side by side, each against
// a room of its own; each page's states in turn.
func TestTheWaitingPageShowsEveryStateInPlainWordsAndPassesAxe(t *testing.T) {
	t.Parallel()
	b := pagetest.NewBrowser(t)
	for _, pc := range pageCases() {
		t.Run(pc.Name, func(t *testing.T) {
			t.Parallel()
			p := newProtocolRoom(t, pc.Cfg)
			site := pagetest.Serve(t, p)
			kit := p.kit
			msg := func(key string, kv ...string) string { return pagetest.Say(kit, pc.Lang, key, kv...) }
			open := func(t *testing.T) *pagetest.Tab { return pc.Open(t, b, site+"/seckill/s1/queue") }
			enterWaiting := func() (int, string, any) { return 200, "", waiting(5) }

			t.Run("buy", func(t *testing.T) {
				p.mu.Lock()
				p.enter, p.answer, p.polls, p.roomReads = enterWaiting, waiting(5), 0, 0
				p.mu.Unlock()
				start := time.Now()
				tab := open(t)
				tab.WaitState("waiting")
				// The proof of work was shown as it went: "Checking your browser — 25 %".
				checking, _, _ := strings.Cut(msg("common.checking"), "{percent}")
				var progress []string
				for _, s := range tab.Said() {
					if strings.HasPrefix(s, checking) {
						progress = append(progress, strings.TrimPrefix(s, checking))
					}
				}
				if len(progress) < 2 || !strings.Contains(progress[0], "25") || !strings.Contains(progress[len(progress)-1], "100") {
					t.Errorf("the proof of work was shown as %q, want 25 %% ... 100 %% (said %q)", progress, tab.Said())
				}
				tab.WaitText("status", msg("room.waiting", "position", "5"))
				if got := tab.Text("detail"); got != msg("room.ahead", "ahead", "4") {
					t.Errorf("ahead: %q", got)
				}
				if got := tab.Text("wait"); !strings.HasPrefix(got, strings.Split(msg("room.wait_range"), "{")[0]) || !strings.Contains(got, "20") || !strings.Contains(got, "40") {
					t.Errorf("the wait %q is not a range of 20 to 40 seconds", got)
				}
				if !tab.Visible("queue") || pagetest.JS[string](tab, `document.getElementById("sk-queue").getAttribute("aria-valuenow")`) == "" {
					t.Errorf("no progress bar while waiting")
				}
				if title := pagetest.JS[string](tab, `document.title`); !strings.Contains(title, "5") {
					t.Errorf("the title %q does not show the position", title)
				}
				tab.Axe("waiting")
				p.set(waiting(2))
				tab.WaitText("status", msg("room.waiting", "position", "2"))
				p.set(map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "admitted", "refresh_s": 5,
					"admitted_until": time.Now().Add(95 * time.Second).UTC().Format(time.RFC3339)})
				tab.WaitState("admitted")
				if got := tab.Text("status"); got != msg("room.admitted") {
					t.Errorf("admitted: %q", got)
				}
				tab.WaitText("timer", ":")
				timer := tab.Text("timer")
				if !strings.HasPrefix(timer, strings.Split(msg("common.time_left"), "{")[0]) || !(strings.Contains(timer, "1:3") || strings.Contains(timer, "1:2")) {
					t.Errorf("the time left reads %q, want about 1:3x", timer)
				}
				if title := pagetest.JS[string](tab, `document.title`); !strings.HasPrefix(title, strings.Split(msg("room.title_turn"), "{")[0]) {
					t.Errorf("the title %q does not say it is your turn", title)
				}
				tab.WaitShown("buy")
				if got := tab.Text("buy"); got != msg("room.buy") {
					t.Errorf("the Buy button reads %q", got)
				}
				if focused := pagetest.JS[string](tab, `document.activeElement.id`); focused != "sk-buy" {
					t.Errorf("the focus is on %q, want the Buy button", focused)
				}
				tab.Axe("admitted")
				// The countdown counts down.
				for first := tab.Text("timer"); tab.Text("timer") == first; {
					time.Sleep(100 * time.Millisecond)
				}
				tab.Click("buy")
				tab.WaitState("bought")
				if got := tab.Text("status"); got != msg("room.bought", "order", "o-42") {
					t.Errorf("bought: %q", got)
				}
				tab.WaitText("detail", msg("room.order_confirmed"))
				// The page asked nothing beyond the protocol: no more than one poll per
				// refresh_s (1 s here), and not the room's public state until asked.
				p.mu.Lock()
				polls, reads := p.polls, p.roomReads
				p.mu.Unlock()
				if limit := int(time.Since(start)/time.Second) + 1; polls > limit || polls < 2 {
					t.Errorf("%d polls in %v, want at most one a second (refresh_s)", polls, time.Since(start))
				}
				if reads != 0 {
					t.Errorf("the page read GET /room %d times before Check this queue was opened", reads)
				}
				pagetest.JS[bool](tab, `document.getElementById("sk-check").open = true`)
				tab.WaitText("commitment", "5eed0c0ffee")
				if got := tab.Text("entry"); got != "e-abc" {
					t.Errorf("Check this queue shows the entry %q, want e-abc", got)
				}
				tab.Axe("bought")
				if got := strings.Join(tab.States(), ","); got != "entering,waiting,admitted,bought" {
					t.Errorf("states %s, want entering,waiting,admitted,bought", got)
				}
			})

			for _, c := range []struct {
				name, key, state string
				enter            func() (int, string, any)
				answer           any
			}{
				{"sold out", "room.sold_out", "sold_out", enterWaiting, map[string]any{"state": "sold_out", "refresh_s": 1}},
				{"ended", "room.ended", "ended", func() (int, string, any) {
					return 403, "", map[string]string{"code": "ended", "message": "the sale has ended"}
				}, nil},
				{"paused", "room.paused", "paused", enterWaiting, map[string]any{"ticket": "t1", "state": "paused", "refresh_s": 1}},
				{"full", "room.full", "full", func() (int, string, any) {
					return 503, "30", map[string]string{"code": "queue_full", "message": "the waiting room is full; try again later"}
				}, nil},
			} {
				t.Run(c.name, func(t *testing.T) {
					p.mu.Lock()
					p.enter, p.answer = c.enter, waiting(3)
					p.mu.Unlock()
					tab := open(t)
					if c.answer != nil {
						tab.WaitState("waiting")
						p.set(c.answer)
					}
					tab.WaitState(c.state)
					text := tab.Text("status")
					if c.state == "full" {
						text = tab.Text("problem")
						retry := strings.Split(msg("common.retry_in"), "{")[0]
						tab.WaitText("retry", retry)
						if got := tab.Text("retry"); !strings.Contains(got, "30") && !strings.Contains(got, "29") && !strings.Contains(got, "28") {
							t.Errorf("the retry line reads %q, want it to count down from 30 seconds", got)
						}
					}
					if text != msg(c.key) {
						t.Errorf("%s: the page says %q, want %q", c.name, text, msg(c.key))
					}
					tab.HidesCodes(c.name, "sold_out", "queue_full", "ended\"", "paused\"")
					tab.Axe(c.name)
				})
			}
		})
	}
}

// The default page, as README.md and docs/room.md show it: desktop and phone (390x844),
// waiting and admitted. SECKILL_SCREENSHOTS=<dir> (make screenshots) writes them there.
func TestScreenshotsOfTheWaitingPage(t *testing.T) {
	dir, b := pagetest.ScreenshotBrowser(t)
	p := newProtocolRoom(t, nil)
	site := pagetest.Serve(t, p)
	p.enter, p.answer = func() (int, string, any) { return 200, "", waiting(1234) }, waiting(1234)
	for _, s := range pagetest.Screens {
		tab := b.TabOn(t, "en-US", s)
		tab.Go(site + "/seckill/s1/queue")
		tab.WaitState("waiting")
		time.Sleep(1200 * time.Millisecond) // the bar's transition (0.8 s) to its place
		tab.Screenshot(s.File(dir, "room-waiting"))
		if s.Mobile {
			if w := pagetest.JS[int](tab, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("the phone page is %d px wide, want no horizontal scroll at 390", w)
			}
		}
	}
	p.set(map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "admitted", "refresh_s": 5,
		"admitted_until": time.Now().Add(100 * time.Second).UTC().Format(time.RFC3339)})
	for _, s := range pagetest.Screens {
		tab := b.TabOn(t, "en-US", s)
		p.set(waiting(3))
		tab.Go(site + "/seckill/s1/queue")
		tab.WaitState("waiting")
		p.set(map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "admitted", "refresh_s": 5,
			"admitted_until": time.Now().Add(100 * time.Second).UTC().Format(time.RFC3339)})
		tab.WaitState("admitted")
		tab.WaitShown("buy")
		tab.Screenshot(s.File(dir, "room-admitted"))
	}
}

// notificationSpy counts the page's permission requests and the notifications it shows.
const notificationSpy = `window.__asked = 0; window.__notes = [];
if (window.Notification) {
  const N = window.Notification, ask = N.requestPermission.bind(N);
  class Spy extends N { constructor(title, o) { super(title, o); window.__notes.push(title); } }
  Spy.requestPermission = (...a) => { window.__asked++; return ask(...a); };
  window.Notification = Spy;
}`

// Your turn on a phone: the queue's bar goes for good and the Buy button stays where the
// buyer sees it. The bar's own timer (it moves the bar between polls) must not bring it back
// above the button a second later: the button would move down under the buyer's finger. Nor
// after the buyer leaves: the bar would come back over "You left the queue".
func TestTheBuyButtonStaysPutOnceTheTurnComes(t *testing.T) {
	t.Parallel()
	p := newProtocolRoom(t, nil)
	p.enter, p.answer = func() (int, string, any) { return 200, "", waiting(3) }, waiting(3)
	site := pagetest.Serve(t, p)
	tab := pagetest.NewBrowser(t).Tab(t, "ja-JP,ja;q=0.9", 390, 844, true)
	tab.Go(site + "/seckill/s1/queue")
	// The bar's timer runs each second: three of its ticks.
	threeTicks := func(check func()) {
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			check()
		}
	}
	tab.WaitState("waiting")
	tab.WaitShown("queue")
	tab.Click("leave")
	tab.WaitState("left")
	threeTicks(func() {
		if tab.Visible("queue") {
			t.Fatal("the queue's bar is back on the page after the buyer left")
		}
	})
	tab.Click("rejoin")
	tab.WaitState("waiting")
	tab.WaitShown("queue")
	p.set(map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "admitted", "refresh_s": 5,
		"admitted_until": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)})
	tab.WaitState("admitted")
	tab.WaitShown("buy")
	rect := `JSON.stringify(document.getElementById("sk-buy").getBoundingClientRect())`
	seen := pagetest.JS[string](tab, rect)
	threeTicks(func() {
		if tab.Visible("queue") {
			t.Fatal("the queue's bar is back on the page after the turn came")
		}
		if now := pagetest.JS[string](tab, rect); now != seen {
			t.Fatalf("Buy moved after it appeared: %s, then %s", seen, now)
		}
	})
	tab.Click("buy")
	tab.WaitState("bought")
}

// Your turn in a tab whose timers are throttled: the page keeps polling (its waits are timed
// in a worker as well), it never asks for notifications on load, only on the button's press,
// and it shows one when the turn comes; the Buy button, which has the focus, works from the
// keyboard. Without JavaScript the page explains why it needs it.
func TestTheWaitingPageKeepsPollingInAThrottledTabAndNotifiesYourTurn(t *testing.T) {
	t.Parallel()
	b := pagetest.NewBrowser(t)
	p := newProtocolRoom(t, nil)
	site := pagetest.Serve(t, p)
	msg := func(key string, kv ...string) string { return pagetest.Say(p.kit, "en", key, kv...) }
	p.enter, p.answer = func() (int, string, any) { return 200, "", waiting(9) }, waiting(9)

	tab := b.Tab(t, "en", 1280, 900, false)
	tab.AddScript(notificationSpy)
	tab.Go(site + "/seckill/s1/queue")
	tab.WaitState("waiting")
	if asked := pagetest.JS[int](tab, `window.__asked`); asked != 0 {
		t.Fatalf("the page asked for notifications %d times on load", asked)
	}
	if !tab.Visible("notify") {
		t.Fatalf("no button to ask for a notification")
	}
	tab.Click("notify")
	for pagetest.JS[int](tab, `window.__asked`) != 1 {
		tab.WaitState("waiting")
	}
	tab.WaitText("notify-note", ".")
	// The buyer said yes (headless chromium has no prompt: the test grants it), in the tab's
	// own browser context (pagetest.Main gives each test one).
	if _, err := chromedp.Call(tab.Ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: site,
		BrowserContextID: chromedp.FromContext(tab.Ctx).BrowserContextID}); err != nil {
		t.Fatalf("granting notifications: %v", err)
	}

	// The tab's own timers stop firing, as in a throttled background tab.
	pagetest.JS[bool](tab, `(() => { window.setTimeout = () => 0; return true; })()`)
	p.mu.Lock()
	before := p.polls
	p.mu.Unlock()
	for {
		p.mu.Lock()
		n := p.polls
		p.mu.Unlock()
		if n >= before+3 {
			break
		}
		if tab.Ctx.Err() != nil {
			t.Fatalf("%d polls since the tab's timers stopped, want the page to keep polling", n-before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.set(map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "admitted", "refresh_s": 5,
		"admitted_until": time.Now().Add(90 * time.Second).UTC().Format(time.RFC3339)})
	tab.WaitState("admitted")
	tab.WaitShown("buy")
	if notes := pagetest.JS[[]string](tab, `window.__notes`); len(notes) != 1 || notes[0] != msg("room.notify_title") {
		t.Errorf("notifications shown: %q, want one %q", notes, msg("room.notify_title"))
	}
	// The keyboard: Enter on the focused Buy button buys.
	if focused := pagetest.JS[string](tab, `document.activeElement.id`); focused != "sk-buy" {
		t.Fatalf("the focus is on %q, want the Buy button", focused)
	}
	if err := chromedp.Do(tab.Ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatalf("pressing Enter: %v", err)
	}
	tab.WaitState("bought")

	// Without JavaScript: the explanation, not a blank page.
	off := b.Tab(t, "de", 390, 844, true)
	if _, err := chromedp.Call(off.Ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("disabling JavaScript: %v", err)
	}
	off.Go(site + "/seckill/s1/queue")
	html, err := chromedp.Run(off.Ctx, chromedp.OuterHTML(chromedp.Search("body")))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	if want := pagetest.Say(p.kit, "de", "common.noscript"); !strings.Contains(html, "<noscript>") || !strings.Contains(html, want) {
		t.Errorf("without JavaScript the page lacks its explanation %q", want)
	}
}
