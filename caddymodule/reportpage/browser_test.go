//go:build integration

package reportpage

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
)

// The report's page in each of its nine languages on a phone (390 x 844): the language and
// its direction on <html>, the summary's counts in the language's plural forms and the
// browser's digits, every check, speed class and moment shown, none of the catalogues'
// English left where the language has its own, nothing wider than the screen (the SHA-256,
// the key id and the verify command wrap), no serious or critical axe-core violation, and no
// script run (the page has none; its policy allows none). Then a draw sale's report: its draw
// card in the language, fitting the phone, axe-clean. One browser, one tab for all nine.
func TestTheReportPageInEveryLanguageFitsAPhoneAndPassesAxe(t *testing.T) {
	b := pagetest.NewBrowser(t)
	p := Must()
	kit := p.Kit()
	if got := strings.Join(kit.Languages(), " "); got != "ar de en es fr ja ko pt-BR zh-Hans" {
		t.Fatalf("the page speaks %s", got)
	}
	// A demo-signed report: the page's longest, with the demo key's warning on top.
	signed, key := sampleReport(t, true)
	drawn := sampleDrawReport(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/seckill/draw-8/") {
			p.Serve(w, r, drawn)
			return
		}
		p.Serve(w, r, signed)
	}))
	t.Cleanup(srv.Close)
	tab := b.TabFor(t, 10*time.Minute, "en", 390, 844, true)
	for _, l := range pagetest.Languages {
		t.Run(l.Lang, func(t *testing.T) {
			tab := tab.For(t, 2*time.Minute)
			tab.SetLanguage(l.Accept)
			tab.Go(srv.URL + "/seckill/drop-7/report")
			if got := pagetest.JS[string](tab, `document.documentElement.lang + " " + document.documentElement.dir`); got != l.Lang+" "+pagekit.Direction(l.Lang) {
				t.Fatalf("<html lang dir> = %q, want %s %s", got, l.Lang, pagekit.Direction(l.Lang))
			}
			num := func(n int) string {
				return pagetest.JS[string](tab, fmt.Sprintf(`new Intl.NumberFormat(document.documentElement.lang).format(%d)`, n))
			}
			summary := pagetest.JS[string](tab, `document.getElementById("sk-summary").innerText`)
			for _, want := range []string{
				pagetest.Fill(kit.PluralMessage(l.Lang, "report.summary_units", 2), "units", num(2)),
				pagetest.Fill(kit.PluralMessage(l.Lang, "report.summary_entrants", 3), "entrants", num(3)),
				pagetest.Fill(kit.PluralMessage(l.Lang, "report.summary_bought", 2), "bought", num(2)),
			} {
				if !strings.Contains(summary, want) {
					t.Errorf("the summary %q lacks %q", summary, want)
				}
			}
			shown := pagetest.JS[string](tab, `document.body.innerText`)
			for _, key := range []string{"report.demo_key", "report.result.pass", "report.result.not_applicable",
				"report.class.under_250ms", "report.class.not_admitted", "report.moment.starts", "report.verify_help"} {
				if want := kit.Message(l.Lang, key); !strings.Contains(shown, want) {
					t.Errorf("the page does not show %s (%q)", key, want)
				}
			}
			if got := tab.Text("kid"); got != key.Kid {
				t.Errorf("key id %q, want %q", got, key.Kid)
			}
			if got := tab.Text("command"); got != "seckill-bench verify-report -url "+srv.URL+" -sale drop-7" {
				t.Errorf("the command %q", got)
			}
			if n := pagetest.JS[int](tab, `document.scripts.length`); n != 0 {
				t.Errorf("%d scripts on the page", n)
			}
			tab.Check(l.Lang, pagetest.Untranslated(kit, l.Lang))
			// What a closed check's detail holds (English, marked so) fits once opened too.
			pagetest.JS[bool](tab, `(() => { for (const d of document.querySelectorAll("details")) d.open = true; return true; })()`)
			for _, o := range tab.Overflowing() {
				t.Errorf("opened: does not fit the screen: %s", o)
			}
			tab.Axe(l.Lang + ", details open")

			tab.Go(srv.URL + "/seckill/draw-8/report")
			card := pagetest.JS[string](tab, `document.getElementById("sk-draw").innerText`)
			for _, want := range []string{kit.Message(l.Lang, "report.draw"), kit.Message(l.Lang, "report.check.draw"),
				kit.Message(l.Lang, "report.result.pass"), kit.Message(l.Lang, "report.draw.expired")} {
				if !strings.Contains(card, want) {
					t.Errorf("the draw's card %q lacks %q", card, want)
				}
			}
			tab.Check(l.Lang+", a draw", pagetest.Untranslated(kit, l.Lang))
		})
	}
}
