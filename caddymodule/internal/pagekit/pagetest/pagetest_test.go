//go:build integration

package pagetest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
)

// The checks every state of the pages passes can fail: on a phone's 390 px, a word that
// cannot wrap, a row that does not wrap and text pushed past the left edge of a right-to-left
// page are each caught, and a page that fits is not; an English sentence on a French page is
// caught, and the French one is not.
func TestTheChecksCatchWhatOverflowsAPhoneAndWhatIsLeftInEnglish(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium: not in -short")
	}
	pages := map[string]string{
		"/fits": `<p>Une phrase qui tient sur l'écran et passe à la ligne quand il le faut, comme toutes les phrases de nos pages.</p>`,
		"/word": `<p id="sk-status">Warteschlangenplatzvergabebenachrichtigungseinstellungenübersicht</p>`,
		"/row":  `<div id="sk-row" style="display:flex;gap:8px"><button style="white-space:nowrap">Participer au tirage au sort</button><button style="white-space:nowrap">Changer de taille</button><button style="white-space:nowrap">Me retirer</button></div>`,
		"/left": `<p style="transform:translateX(-80px)">` + strings.Repeat("أمامك 3 أشخاص في الطابور الآن. ", 4) + `</p>`,
		"/fr":   `<p id="sk-status">Vous êtes dans la file</p><p>You are in line</p><div role="progressbar" aria-label="Browser check"></div>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dir := "ltr"
		if r.URL.Path == "/left" {
			dir = "rtl"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="fr" dir="` + dir + `"><head><meta name="viewport" content="width=device-width, initial-scale=1"><title>t</title></head><body style="margin:0;padding:16px">` + pages[r.URL.Path] + `</body></html>`))
	}))
	t.Cleanup(srv.Close)
	b := NewBrowser(t)
	tab := b.Tab(t, "fr", 390, 844, true)
	for path, want := range map[string]string{"/fits": "", "/word": "p#sk-status", "/row": "div#sk-row", "/left": "the page is"} {
		tab.Go(srv.URL + path)
		got := strings.Join(tab.Overflowing(), "\n")
		if want == "" && got != "" {
			t.Errorf("%s fits, but the check says %s", path, got)
		}
		if want != "" && !strings.Contains(got, want) {
			t.Errorf("%s overflows at %s, but the check says %q", path, want, got)
		}
	}

	k, err := pagekit.New(pagekit.Kind{Name: "room", Template: `{{define "page"}}{{.Script}}{{end}}`}, pagekit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	english := Untranslated(k, "fr")
	if !slices.Contains(english, "You are in line") || slices.Contains(english, "JavaScript") || Untranslated(k, "en") != nil {
		t.Fatalf("Untranslated(fr) = %q: want the English heading, no name both languages write", english)
	}
	tab.Go(srv.URL + "/fr")
	if got := strings.Join(tab.Showing(english), ", "); got != "Browser check, You are in line" {
		t.Errorf("the French page with an English line and an English bar's name: %q, want both", got)
	}
	if got := tab.Showing(Untranslated(k, "ja")); len(got) != 2 {
		t.Errorf("the same page as a Japanese one: %q, want the English line and label alone", got)
	}
	for text, want := range map[string]bool{"Nouvel essai dans 30 secondes.": true, "30 秒後にもう一度試します。": false, "Nouvel essai dans .": false} {
		if Says(text, "Nouvel essai dans {seconds}.") != want {
			t.Errorf("Says(%q, the French retry) = %v", text, !want)
		}
	}
}
