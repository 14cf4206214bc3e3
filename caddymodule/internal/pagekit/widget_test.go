package pagekit

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// A page with a provider's widget shows its element, its label in the page's language and the
// provider's script, and its CSP allows that script's origin (and frames) only then; a page
// without a widget allows no other origin.
func TestAWidgetPageAllowsTheProvidersScriptOnlyThenInEveryLanguage(t *testing.T) {
	kind := Kind{Name: "room", Template: `{{define "main"}}<main></main>{{end}}`, Script: "/* ours */"}
	plain, err := New(kind, Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	if err := plain.Serve(w, httptest.NewRequest("GET", "/seckill/s1/queue", nil), "s1", nil, nil); err != nil {
		t.Fatal(err)
	}
	if csp := w.Header().Get("Content-Security-Policy"); strings.Contains(csp, "https:") || strings.Contains(csp, "frame-src") ||
		strings.Contains(w.Body.String(), "sk-widget") {
		t.Fatalf("a page without a widget: CSP %s", csp)
	}
	for provider, origin := range map[string]string{"turnstile": "https://challenges.cloudflare.com", "hcaptcha": "https://*.hcaptcha.com",
		"recaptcha": "https://www.gstatic.com/recaptcha/"} {
		k, err := New(kind, Config{Widget: &Widget{Provider: provider, SiteKey: `key"1`, Action: "enter"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, lang := range k.Languages() {
			label := k.Message(lang, "common.challenge")
			if label == "" || (lang != "en" && label == k.Message("en", "common.challenge")) {
				t.Fatalf("%s: common.challenge is %q", lang, label)
			}
			w := httptest.NewRecorder()
			if err := k.Serve(w, httptest.NewRequest("GET", "/seckill/s1/queue?lang="+lang, nil), "s1", nil, nil); err != nil {
				t.Fatal(err)
			}
			csp, body := w.Header().Get("Content-Security-Policy"), w.Body.String()
			if !strings.Contains(csp, "script-src "+k.ScriptHash()+" ") || !strings.Contains(csp, origin) || !strings.Contains(csp, "frame-src ") {
				t.Fatalf("%s %s: CSP %s", provider, lang, csp)
			}
			if !strings.Contains(body, `id="sk-widget"`) || !strings.Contains(body, `data-sitekey="key&#34;1"`) ||
				!strings.Contains(body, `data-action="enter"`) || !strings.Contains(body, ">"+htmlEscape(label)+"</p>") {
				t.Fatalf("%s %s: the widget's markup is not on the page", provider, lang)
			}
		}
	}
	if HasWidget("privacypass") {
		t.Fatal("Privacy Pass has no widget: the browser presents its tokens")
	}
	if _, err := New(kind, Config{Widget: &Widget{Provider: "turnstile", ScriptURL: "javascript:alert(1)"}}); err == nil {
		t.Fatal("a widget_script_url that is not http(s) was taken")
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
