package pagekit

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testKind is a page like ours: "page" calls "style" and "main".
var testKind = Kind{Name: "room", Script: "console.log('ours');",
	Template: `{{define "style"}}<style>{{.Style}}</style>{{end}}{{define "main"}}<main><h1>{{.T "room.heading"}}</h1></main>{{end}}` +
		`{{define "page"}}<!doctype html><html lang="{{.Lang}}" dir="{{.Dir}}"><head><title>{{.T "room.title"}}</title>{{template "style" .}}</head><body>{{template "main" .}}{{.Script}}</body></html>{{end}}`}

func write(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, k *Kit, sale, acceptLanguage string) (*http.Response, string) {
	t.Helper()
	return getURL(t, k, "/seckill/"+sale+"/queue", sale, acceptLanguage)
}

func getURL(t *testing.T, k *Kit, url, sale, acceptLanguage string) (*http.Response, string) {
	t.Helper()
	r := httptest.NewRequest("GET", url, nil)
	r.Header.Set("Accept-Language", acceptLanguage)
	w := httptest.NewRecorder()
	if err := k.Serve(w, r, sale, nil, nil); err != nil {
		t.Fatal(err)
	}
	return w.Result(), w.Body.String()
}

// A bad template fails at New (the handlers' provision) with its file and line: a parse
// error, a field that does not exist, a message key that does not exist, a template that
// forgets our script or writes it twice.
func TestABadTemplateFailsAtProvisionWithItsFileAndLine(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"parse", "<p>\n{{if}}\n", ":2:"},
		{"field", "<p>\n\n{{.Price}}</p>{{.Script}}", ":3:"},
		{"message", "<p>\n{{.T \"shop.nothing\"}}</p>{{.Script}}", ":2:"},
		{"no script", "<p>hello</p>", "writes {{.Script}} 0 times"},
		{"twice", "{{.Script}}{{.Script}}", "writes {{.Script}} 2 times"},
	} {
		file := write(t, "shop.html", c.src)
		_, err := New(testKind, Config{Template: file})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) && c.want[0] == ':' {
			t.Errorf("%s: New = %v, want an error naming %s and %q", c.name, err, file, c.want)
		}
	}
	if _, err := New(testKind, Config{Sales: map[string]SaleConfig{"s1": {Template: write(t, "s1.html", "{{.Nope}}{{.Script}}")}}}); err == nil || !strings.Contains(err.Error(), "s1.html:1:") {
		t.Errorf("a sale's bad template: New = %v, want its file and line", err)
	}
	if _, err := New(testKind, Config{Template: write(t, "ok.html", "<!doctype html><title>{{.T \"room.title\"}}</title>{{template \"main\" .}}{{.Script}}")}); err != nil {
		t.Errorf("a good template: %v", err)
	}
}

// A template with a script of its own is refused at provision with its file and line: the
// page runs our script only (the CSP would not run it anyway: it names our script's hash).
func TestInlineScriptInATemplateIsRefusedAtProvision(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"script", "<p>a</p>\n<p>b</p>\n<SCRIPT>alert(1)</SCRIPT>{{.Script}}", ":3: <script>"},
		{"handler", "<p>\n<button onclick=\"buy()\">x</button>{{.Script}}", ":2: onclick"},
		{"url", "<a\nhref=\" javascript:alert(1)\">x</a>{{.Script}}", ":1: a javascript: URL"},
		{"written by the template", "{{`<script>1</script>` | html}}{{.Script}}<scr{{if true}}ipt>x</script>", "<script>"},
	} {
		file := write(t, "shop.html", c.src)
		_, err := New(testKind, Config{Template: file})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// The language is the best match of the page's ?lang=, else of Accept-Language, among the
// catalogues (English when none matches: a regional variant finds its language, Portugal's
// Portuguese Brazil's), unless the site or the sale fixes one; Arabic is written right to left.
func TestTheLanguageComesFromAcceptLanguageUnlessTheSiteOrTheSaleFixesIt(t *testing.T) {
	k, err := New(testKind, Config{Sales: map[string]SaleConfig{"berlin": {Lang: "de"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(k.Languages(), " "), "ar de en es fr ja ko pt-BR zh-Hans"; got != want {
		t.Errorf("languages %q, want %q", got, want)
	}
	for accept, want := range map[string]string{
		"zh-CN,zh;q=0.9,en;q=0.8": "zh-Hans", "de-AT": "de", "es-419,es;q=0.9": "es", "fr-FR": "fr", "fr-CA": "fr", "": "en",
		"nl;q=0.9, de;q=0.8": "de", "en-GB,de;q=0.5": "en", "pt-BR": "pt-BR", "pt": "pt-BR", "pt-PT,pt;q=0.9": "pt-BR",
		"ja-JP": "ja", "ko-KR,ko;q=0.9": "ko", "ar-EG,ar;q=0.9": "ar", "ar-SA": "ar", "nl-NL": "en", "sv, ja;q=0.3": "ja",
	} {
		resp, body := get(t, k, "s1", accept)
		if got := resp.Header.Get("Content-Language"); got != want {
			t.Errorf("Accept-Language %q: %s, want %s", accept, got, want)
		}
		if !strings.Contains(body, `<html lang="`+want+`" dir="`+Direction(want)+`">`) {
			t.Errorf("Accept-Language %q: the page is not lang=%s", accept, want)
		}
	}
	if _, body := get(t, k, "s1", "ar"); !strings.Contains(body, `<html lang="ar" dir="rtl">`) {
		t.Errorf("the Arabic page is not right to left: %.80s", body)
	}
	// ?lang= (the storefront's choice) before Accept-Language; one no catalogue is near, or
	// not a language, leaves it to Accept-Language.
	for query, want := range map[string]string{"?lang=ja": "ja", "?lang=pt": "pt-BR", "?lang=fr-BE": "fr", "?lang=nl": "de",
		"?lang=%3Cscript%3E": "de", "?user=u1&lang=ar": "ar"} {
		if resp, _ := getURL(t, k, "/seckill/s1/queue"+query, "s1", "de-DE"); resp.Header.Get("Content-Language") != want {
			t.Errorf("%s with Accept-Language de-DE: %s, want %s", query, resp.Header.Get("Content-Language"), want)
		}
	}
	if resp, _ := getURL(t, k, "/seckill/berlin/queue?lang=ja", "berlin", "ja"); resp.Header.Get("Content-Language") != "de" {
		t.Errorf("?lang= over the sale's fixed language: %s", resp.Header.Get("Content-Language"))
	}
	resp, body := get(t, k, "berlin", "zh-CN")
	if resp.Header.Get("Content-Language") != "de" || !strings.Contains(body, "Sie stehen in der Warteschlange") {
		t.Errorf("the sale's lang: %s", resp.Header.Get("Content-Language"))
	}
	site, err := New(testKind, Config{Lang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, site, "s1", "de"); resp.Header.Get("Content-Language") != "es" {
		t.Errorf("the site's lang: %s, want es", resp.Header.Get("Content-Language"))
	}
	if _, err := New(testKind, Config{Lang: "nl"}); err == nil || !strings.Contains(err.Error(), "no message catalogue") {
		t.Errorf("lang nl without a catalogue: %v", err)
	}
}

// A shop's catalogues lay its words over ours and may add a language, which gets English for
// the keys it lacks; a file whose name is not a language is refused.
func TestAShopsCataloguesExtendOurs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "de.json"), []byte(`{"room.heading": "Willkommen bei Schuh-Shop"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "it.json"), []byte(`{"room.title": "Sala d'attesa"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "he.json"), []byte(`{"room.title": "חדר המתנה"}`), 0o644)
	k, err := New(testKind, Config{Messages: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, k, "s1", "de"); !strings.Contains(body, "Willkommen bei Schuh-Shop") || !strings.Contains(body, "<title>Warteraum</title>") {
		t.Errorf("de with the shop's heading: %s", body[:200])
	}
	resp, body := get(t, k, "s1", "it-CH")
	if resp.Header.Get("Content-Language") != "it" || !strings.Contains(body, "Sala d&#39;attesa") || !strings.Contains(body, "You are in line") {
		t.Errorf("it: %s %s", resp.Header.Get("Content-Language"), body[:200])
	}
	// A new language written right to left is laid out so, by its script.
	if _, body := get(t, k, "s1", "he-IL"); !strings.Contains(body, `<html lang="he" dir="rtl">`) {
		t.Errorf("he: %.80s", body)
	}
	bad := write(t, "shoes.json", `{}`)
	if _, err := New(testKind, Config{Messages: []string{bad}}); err == nil || !strings.Contains(err.Error(), "not a language tag") {
		t.Errorf("a catalogue named shoes.json: %v", err)
	}
	broken := write(t, "es.json", `{"a": 1}`)
	if _, err := New(testKind, Config{Messages: []string{broken}}); err == nil || !strings.Contains(err.Error(), broken) {
		t.Errorf("a broken catalogue: %v", err)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// The page's CSP names our script's hash and the hash of each <style> the template writes,
// never 'unsafe-inline'; a shop's own style is allowed by its hash.
func TestThePagesPolicyNamesOurScriptAndTheTemplatesStylesByHash(t *testing.T) {
	file := write(t, "shop.html", `<!doctype html><html lang="{{.Lang}}"><head><title>Shoes</title><style>h1{color:#123}</style>{{template "style" .}}</head><body>{{template "main" .}}{{.Script}}</body></html>`)
	k, err := New(testKind, Config{Template: file, ImageSources: []string{"'self'", "https://cdn.shoes.example"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, k, "s1", "en")
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src " + hashOf(testKind.Script) + ";", hashOf("h1{color:#123}"), hashOf(Style),
		"img-src 'self' https://cdn.shoes.example;", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
	if !strings.Contains(body, `<script type="module">`+testKind.Script+`</script>`) || !strings.Contains(body, "<noscript>") {
		t.Errorf("the page lacks our script or its noscript")
	}
	if _, err := New(testKind, Config{ImageSources: []string{"https://x; script-src *"}}); err == nil {
		t.Errorf("an image source that ends the directive was taken")
	}
}

// Numbers in a template are formatted for the page's language.
func TestNumbersAreFormattedForTheLanguage(t *testing.T) {
	file := write(t, "n.html", `<p id="n">{{.Number 1234567}}</p><p id="m">{{.T "room.units_left" "units" 1234}}</p>{{.Script}}`)
	k, err := New(testKind, Config{Template: file})
	if err != nil {
		t.Fatal(err)
	}
	// Arabic: the Latin digits browsers' Intl gives it (CLDR 42), not golang.org/x/text's.
	for lang, want := range map[string][]string{"en": {"1,234,567", "1,234 left."}, "de": {"1.234.567", "Noch 1.234 verfügbar."},
		"ar": {"1,234,567", "تبقّت 1,234 قطعة."}, "ja": {"1,234,567", "残り1,234点です。"}} {
		_, body := get(t, k, "s1", lang)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: the page lacks %q", lang, w)
			}
		}
	}
}

// The page's client calls the edge where the handler serves it: the page's data carries the
// handler's prefix and the app's orders prefix (the defaults until Mount), and a template can
// read them; a Vary set before (seckill_cors's Origin) is kept.
func TestThePageCarriesTheEdgesURLSpace(t *testing.T) {
	k, err := Compile(testKind, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, k, "s1", ""); !strings.Contains(body, `data-prefix="/seckill" data-orders="/orders"`) {
		t.Errorf("default page data: %.600s", body)
	}
	k.Mount("/shop-api/drop", "/shop-api/drop/orders")
	if _, body := get(t, k, "s1", ""); !strings.Contains(body, `data-prefix="/shop-api/drop" data-orders="/shop-api/drop/orders"`) {
		t.Errorf("mounted page data: %.600s", body)
	}
	d := k.data("en", "s1", nil)
	if d.Prefix != "/shop-api/drop" || d.OrdersPrefix != "/shop-api/drop/orders" {
		t.Errorf("template data %q %q", d.Prefix, d.OrdersPrefix)
	}
	w := httptest.NewRecorder()
	w.Header().Set("Vary", "Origin")
	if err := k.Serve(w, httptest.NewRequest("GET", "/shop-api/drop/s1/queue", nil), "s1", nil, nil); err != nil {
		t.Fatal(err)
	}
	if v := w.Header().Values("Vary"); len(v) != 2 || v[0] != "Origin" || v[1] != "Accept-Language" {
		t.Errorf("Vary %q, want Origin and Accept-Language", v)
	}
}
