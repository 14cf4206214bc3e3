//go:build integration

package draw

import (
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
)

// drawAccept is what the draw's sweep sends for each language: other regions and forms than
// the room's sweep (pagetest.Languages), so that both are met.
var drawAccept = map[string]string{
	"en": "en-GB,en;q=0.9", "de": "de-AT,de;q=0.9", "es": "es-419,es;q=0.9", "fr": "fr-CA,fr;q=0.9",
	"pt-BR": "pt-PT,pt;q=0.9", "ja": "ja", "ko": "ko", "zh-Hans": "zh-CN,zh;q=0.9", "ar": "ar-SA,ar;q=0.9",
}

// The draw page in each of its nine languages on a phone (390 px wide): every state of an
// entry (not entered, entered after the work, the size changed, withdrawn, won with the claim
// counting down and "Check this draw" open, claimed, lost, waiting for a later wave, won but
// the claim expired), in the language's sentences and plural forms, none of them left in
// English, nothing wider than the screen, no serious or critical axe-core violation; Arabic
// right to left, the buttons and the labels of "Check this draw" starting at the right. One
// browser; each language on a tab of its own against a draw of its own, languages side by side
// (one language's waits for the page overlap another's checks).
func TestTheDrawPageInEveryLanguageFitsAPhoneAndPassesAxe(t *testing.T) {
	t.Parallel()
	drawn := map[string]any{"state": "drawn", "seed_commitment": "5eed0c0ffee", "seed": "5eed", "entries": 1234, "entries_root": "r00t",
		"randomness": "drand", "beacon": map[string]any{"round": 123, "chain_hash": "52db9ba70e0c", "genesis_time": 1, "period": 3}}
	pagetest.EachLanguageSideBySide(t, newProtocolDraw(t, nil).kit, 390, 844, true, 2*time.Minute, func(t *testing.T, s *pagetest.Sweep) {
		p := newProtocolDraw(t, nil)
		site := pagetest.Serve(t, p)
		open := p.result
		tab, l, english, msg, num := s.Tab, s.Lang, s.English, s.Msg, s.Num
		status := func(state, want string) {
			t.Helper()
			tab.WaitState(state)
			if got := tab.Text("status"); got != want {
				t.Errorf("%s: %q, want %q", state, got, want)
			}
		}
		tab.SetLanguage(drawAccept[l.Lang])

		p.set(nil, open)
		tab.Go(site + "/seckill/s1/draw")
		tab.HasLanguage(l.Lang)
		status("none", msg("draw.none"))
		tab.WaitSays("closes", msg("draw.closes"))
		tab.FromStart(l.Lang, "the Enter button", ".sk-actions", "#sk-enter")
		tab.Check("not entered", english)
		pagetest.JS[bool](tab, `(() => { document.getElementById("sk-size").value = "S"; return true; })()`)
		tab.Click("enter")
		status("entered", msg("draw.entered", "size", "S"))
		tab.FromStart(l.Lang, "the Change button", ".sk-actions", "#sk-change")
		tab.Check("entered", english)
		// The size picked and Change pressed in one turn of the page's loop: an entered page
		// puts its entry's size back in the picker on each answer it gets while idle.
		pagetest.JS[bool](tab, `(() => { document.getElementById("sk-size").value = "M"; document.getElementById("sk-change").click(); return true; })()`)
		tab.WaitText("status", msg("draw.changed", "size", "M"))
		tab.Check("changed size", english)
		tab.Click("withdraw")
		status("withdrawn", msg("draw.withdrawn"))
		tab.Check("withdrawn", english)

		p.set(map[string]any{"entry_id": "e-7f3a", "state": "won", "variant": "M", "rank": 3, "wave": 1,
			"claim_until": time.Now().Add(115 * time.Second).UTC().Format(time.RFC3339), "variants": testSizes}, drawn)
		tab.Go(site + "/seckill/s1/draw")
		tab.WaitState("won")
		if got, want := tab.Text("status"), msg("draw.won", "size", "M"); !pagetest.Says(got, want) {
			t.Errorf("won: %q, want %q", got, want)
		}
		tab.WaitSays("timer", msg("draw.claim_left"))
		if got, want := pagetest.JS[string](tab, `document.title`), msg("draw.title_won", "title", msg("draw.title")); got != want {
			t.Errorf("the title %q, want %q", got, want)
		}
		tab.WaitText("closes", pagetest.Fill(p.kit.PluralMessage(l.Lang, "draw.entries", 1234), "entries", num(1234)))
		pagetest.JS[bool](tab, `document.getElementById("sk-check").open = true`)
		tab.WaitText("randomness", msg("draw.beacon", "round", num(123)))
		tab.FromStart(l.Lang, "the labels of Check this draw", "#sk-check dl", "#sk-check dt")
		tab.Check("won, with Check this draw open", english)

		for _, c := range []struct{ state, key string }{{"claimed", "draw.claimed"}, {"lost", "draw.lost"}, {"waiting", "draw.waiting"}, {"expired", "draw.expired"}} {
			p.set(map[string]any{"entry_id": "e-7f3a", "state": c.state, "variant": "M", "rank": 900, "variants": testSizes}, drawn)
			tab.Go(site + "/seckill/s1/draw")
			status(c.state, msg(c.key))
			tab.Check(c.state, english)
		}
	})
}
