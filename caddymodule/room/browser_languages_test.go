//go:build integration

package room

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/language"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
)

// The waiting page in each of its nine languages on a phone (390 px wide): every state a
// buyer meets (entering with the work done, waiting, one person ahead, left, back in line,
// paused, admitted, bought with "Check this queue" open, sold out, ended, the room full), in
// the language's sentences and plural forms (the browser's plural rules asking for the very
// forms our catalogue test does), none of them left in English, nothing wider
// than the screen, no serious or critical axe-core violation; Arabic right to left, the
// progress bar filling from the right and the buttons starting there. One browser; each
// language on a tab of its own against a room of its own, languages side by side (one
// language's waits for the page's polls overlap another's checks).
func TestTheWaitingPageInEveryLanguageFitsAPhoneAndPassesAxe(t *testing.T) {
	t.Parallel()
	kit := newProtocolRoom(t, nil).kit
	if got := strings.Join(kit.Languages(), " "); got != "ar de en es fr ja ko pt-BR zh-Hans" {
		t.Fatalf("the page speaks %s", got)
	}
	// The admission outlasts a language's whole sweep (two minutes): on a loaded machine the
	// axe checks between "admitted" and the click on Buy must not see the turn run out.
	admitted := func() map[string]any {
		return map[string]any{"ticket": "t1", "entry_id": "e-abc", "state": "admitted", "refresh_s": 5,
			"admitted_until": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)}
	}
	pagetest.EachLanguageSideBySide(t, kit, 390, 844, true, 2*time.Minute, func(t *testing.T, s *pagetest.Sweep) {
		p := newProtocolRoom(t, nil)
		site := pagetest.Serve(t, p)
		tab, l, english, msg, num := s.Tab, s.Lang, s.English, s.Msg, s.Num
		count := func(key, name string, n int) string {
			return pagetest.Fill(kit.PluralMessage(l.Lang, key, n), name, num(n))
		}
		tab.SetLanguage(l.Accept)

		p.mu.Lock()
		p.hold, p.held = make(chan struct{}), 0
		p.enter, p.answer = func() (int, string, any) { return 200, "", waiting(12) }, waiting(12)
		hold := p.hold
		p.mu.Unlock()
		tab.Go(site + "/seckill/s1/queue")
		tab.HasLanguage(l.Lang)
		// The browser's plural rules ask for the forms our catalogue has: each category of
		// Intl.PluralRules (decimals' too, which "other" answers) has a form, and each form
		// is one the browser may ask for.
		intl := pagetest.JS[[]string](tab, `new Intl.PluralRules(document.documentElement.lang).resolvedOptions().pluralCategories`)
		need := pagekit.PluralCategories(language.MustParse(l.Lang))
		for _, c := range intl {
			if c != "other" && !slices.Contains(need, c) {
				t.Errorf("the browser's %s has the plural category %q, which the catalogue test does not ask for (%v)", l.Lang, c, need)
			}
		}
		for _, c := range need {
			if !slices.Contains(intl, c) {
				t.Errorf("the catalogue test asks %s for the plural form %q, which the browser never picks (%v)", l.Lang, c, intl)
			}
		}
		// Entering: the work done, the entry on its way.
		for held := 0; held == 0; {
			p.mu.Lock()
			held = p.held
			p.mu.Unlock()
			if tab.Ctx.Err() != nil {
				t.Fatalf("the page never entered (its entry never reached the gateway)")
			}
			time.Sleep(50 * time.Millisecond)
		}
		tab.WaitText("detail", msg("common.checking_help"))
		if got, want := tab.Text("status"), msg("common.checking"); !pagetest.Says(got, want) {
			t.Errorf("entering: %q, want %q", got, want)
		}
		tab.Check("entering", english)
		p.mu.Lock()
		close(hold)
		p.hold = nil
		p.mu.Unlock()

		tab.WaitState("waiting")
		tab.WaitText("status", msg("room.waiting", "position", num(12)))
		if got, want := tab.Text("detail"), count("room.ahead", "ahead", 11); got != want {
			t.Errorf("11 ahead: %q, want %q", got, want)
		}
		if got, want := tab.Text("units"), count("room.units_left", "units", 12); got != want {
			t.Errorf("12 left: %q, want %q", got, want)
		}
		if got, want := pagetest.JS[string](tab, `document.title`), msg("room.title_waiting", "position", num(12), "title", msg("room.title")); got != want {
			t.Errorf("the title %q, want %q", got, want)
		}
		tab.FromStart(l.Lang, "the progress bar", "#sk-queue", "#sk-queue > div")
		tab.Check("waiting", english)
		p.set(waiting(2))
		tab.WaitText("status", msg("room.waiting", "position", num(2)))
		if got, want := tab.Text("detail"), count("room.ahead", "ahead", 1); got != want {
			t.Errorf("1 ahead: %q, want %q", got, want)
		}

		tab.Click("leave")
		tab.WaitState("left")
		if got := tab.Text("status"); got != msg("room.left") {
			t.Errorf("left: %q", got)
		}
		tab.FromStart(l.Lang, "the button to join again", ".sk-actions", "#sk-rejoin")
		tab.Check("left", english)
		tab.Click("rejoin")
		tab.WaitState("waiting")

		p.set(map[string]any{"ticket": "t1", "state": "paused", "refresh_s": 1})
		tab.WaitState("paused")
		if got := tab.Text("status"); got != msg("room.paused") {
			t.Errorf("paused: %q", got)
		}
		tab.Check("paused", english)

		p.set(admitted())
		tab.WaitState("admitted")
		tab.WaitShown("buy")
		if got := tab.Text("status"); got != msg("room.admitted") {
			t.Errorf("admitted: %q", got)
		}
		tab.WaitSays("timer", msg("common.time_left"))
		if got := tab.Text("buy"); got != msg("room.buy") {
			t.Errorf("the Buy button reads %q", got)
		}
		tab.Check("admitted", english)
		tab.Click("buy")
		tab.WaitState("bought")
		if got := tab.Text("status"); got != msg("room.bought", "order", "o-42") {
			t.Errorf("bought: %q", got)
		}
		tab.WaitText("detail", msg("room.order_confirmed"))
		pagetest.JS[bool](tab, `document.getElementById("sk-check").open = true`)
		tab.WaitText("commitment", "5eed0c0ffee")
		tab.Check("bought, with Check this queue open", english)

		for _, c := range []struct {
			state, key, where string
			status            int
			retry, code       string
		}{
			{"sold_out", "room.sold_out", "status", 410, "", "sold_out"},
			{"ended", "room.ended", "status", 403, "", "ended"},
			{"full", "room.full", "problem", 503, "30", "queue_full"},
		} {
			p.mu.Lock()
			p.enter = func() (int, string, any) {
				return c.status, c.retry, map[string]string{"code": c.code, "message": c.code}
			}
			p.mu.Unlock()
			tab.Go(site + "/seckill/s1/queue")
			tab.WaitState(c.state)
			if got := tab.Text(c.where); got != msg(c.key) {
				t.Errorf("%s: %q, want %q", c.state, got, msg(c.key))
			}
			if c.retry != "" {
				tab.WaitSays("retry", msg("common.retry_in"))
			}
			tab.Check(c.state, english)
		}
	})
}
