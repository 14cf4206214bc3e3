package pagekit

import (
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Accept-Language and ?lang= come from the network: whatever they hold, the page is served in
// one of the catalogues' languages, and says so, with that language's direction.
func FuzzTheLanguageOfAnyAcceptLanguage(f *testing.F) {
	for _, s := range []string{"", "zh-CN,zh;q=0.9", "de-AT", "es-419;q=0.5, en;q=0.4", "*", "x-klingon", "en;q=abc", "zh-Hant-TW", strings.Repeat("de,", 500)} {
		f.Add(s, "")
	}
	for _, q := range []string{"ar", "pt", "zh-Hant", "x-klingon", "ja-JP-u-ca-japanese", strings.Repeat("a-", 40)} {
		f.Add("de", q)
	}
	k, err := New(testKind, Config{})
	if err != nil {
		f.Fatal(err)
	}
	langs := k.Languages()
	f.Fuzz(func(t *testing.T, accept, query string) {
		r := httptest.NewRequest("GET", "/seckill/s1/queue?lang="+url.QueryEscape(query), nil)
		r.Header.Set("Accept-Language", accept)
		w := httptest.NewRecorder()
		if err := k.Serve(w, r, "s1", nil, nil); err != nil {
			t.Fatal(err)
		}
		lang := w.Result().Header.Get("Content-Language")
		if !slices.Contains(langs, lang) || !strings.Contains(w.Body.String(), `<html lang="`+lang+`" dir="`+Direction(lang)+`">`) {
			t.Fatalf("Accept-Language %q, ?lang=%q: served %q, want one of %v", accept, query, lang, langs)
		}
	})
}
