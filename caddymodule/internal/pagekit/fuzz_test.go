package pagekit

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// Accept-Language comes from the network: whatever it holds, the page is served in one of
// the catalogues' languages, and says so.
func FuzzTheLanguageOfAnyAcceptLanguage(f *testing.F) {
	for _, s := range []string{"", "zh-CN,zh;q=0.9", "de-AT", "es-419;q=0.5, en;q=0.4", "*", "x-klingon", "en;q=abc", "zh-Hant-TW", strings.Repeat("de,", 500)} {
		f.Add(s)
	}
	k, err := New(testKind, Config{})
	if err != nil {
		f.Fatal(err)
	}
	langs := k.Languages()
	f.Fuzz(func(t *testing.T, accept string) {
		r := httptest.NewRequest("GET", "/seckill/s1/queue", nil)
		r.Header.Set("Accept-Language", accept)
		w := httptest.NewRecorder()
		if err := k.Serve(w, r, "s1", nil, nil); err != nil {
			t.Fatal(err)
		}
		lang := w.Result().Header.Get("Content-Language")
		if !slices.Contains(langs, lang) || !strings.Contains(w.Body.String(), `<html lang="`+lang+`">`) {
			t.Fatalf("Accept-Language %q: served %q, want one of %v", accept, lang, langs)
		}
	})
}
