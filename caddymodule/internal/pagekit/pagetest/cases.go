package pagetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
)

// Serve serves h for the test's life and returns its URL: the pages' tests put their fake
// protocol behind it.
func Serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Case is one way of showing a page: a browser language, with our page or a shop's (Cfg, whose
// own words Shop the page must show).
type Case struct {
	Name, AcceptLanguage, Lang string
	Cfg                        *pagekit.Config
	Shop                       string
}

// Open opens url in a desktop tab of b set to the case's language, and checks that the page
// speaks it and, for a shop's page, shows the shop's words.
func (c Case) Open(t *testing.T, b *Browser, url string) *Tab {
	t.Helper()
	tab := b.Tab(t, c.AcceptLanguage, 1280, 900, false)
	tab.Go(url)
	if got := JS[string](tab, `document.documentElement.lang`); got != c.Lang {
		t.Fatalf("<html lang=%q>, want %q", got, c.Lang)
	}
	if c.Shop != "" && !strings.Contains(JS[string](tab, `document.body.innerText`), c.Shop) {
		t.Fatalf("the shop's page lacks its own words %q", c.Shop)
	}
	return tab
}

// Say is key's message in lang with its placeholders filled (kv: name, value, ...); a key the
// catalogue lacks panics, so a test never compares against "".
func Say(kit *pagekit.Kit, lang, key string, kv ...string) string {
	s := kit.Message(lang, key)
	if s == "" {
		panic("no message " + key)
	}
	return Fill(s, kv...)
}

// Sweep is one language of a page's language sweep: the sweep's one tab (bounded for this
// language), the catalogue, and the messages the language leaves in English.
type Sweep struct {
	*Tab
	Kit     *pagekit.Kit
	Lang    Language
	English []string
}

// Msg is key's message in the sweep's language, its placeholders filled.
func (s *Sweep) Msg(key string, kv ...string) string {
	return Fill(s.Kit.Message(s.Lang.Lang, key), kv...)
}

// Num is n as the page's language writes it (Intl.NumberFormat of the page's lang).
func (s *Sweep) Num(n int) string {
	return JS[string](s.Tab, fmt.Sprintf(`new Intl.NumberFormat(document.documentElement.lang).format(%d)`, n))
}

// ScreenshotBrowser is the directory `make screenshots` wants the pages' pictures in and a
// browser to take them; without SECKILL_SCREENSHOTS the test is skipped.
func ScreenshotBrowser(t *testing.T) (string, *Browser) {
	t.Helper()
	dir := ScreenshotDir(t)
	return dir, NewBrowser(t)
}

// HidesCodes checks that the page's text shows none of codes: the protocol's states and
// codes are for the page, the buyer reads sentences.
func (p *Tab) HidesCodes(label string, codes ...string) {
	p.t.Helper()
	text := JS[string](p, `document.body.innerText`)
	for _, c := range codes {
		if strings.Contains(text, c) {
			p.t.Errorf("%s: the page shows the code %s", label, c)
		}
	}
}
