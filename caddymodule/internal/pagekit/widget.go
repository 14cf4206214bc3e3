package pagekit

import (
	"fmt"
	"html"
	"net/url"
	"strings"
)

// Widget is a CAPTCHA provider's widget on the page (the handler's challenge_provider): the
// page shows it above its own script, with the message common.challenge, and sends its token
// with the entry. The provider's script is the only script from elsewhere the page's
// Content-Security-Policy allows, and only on a page that has a widget.
type Widget struct {
	// Provider is turnstile, hcaptcha or recaptcha.
	Provider string
	// SiteKey is the widget's public site key.
	SiteKey string
	// Action is the widget's action (Turnstile's data-action, reCAPTCHA's), "" for none.
	Action string
	// ScriptURL replaces the provider's script (a self-hosted copy; a stand-in in tests): its
	// origin is what the policy allows instead of the provider's.
	ScriptURL string
}

// widgetKind is what the page needs of a provider: the widget's element class, the name of the
// field its script fills with the token, its script, and the CSP sources it loads from (script,
// frames; style and connect for hCaptcha, whose widget injects both).
type widgetKind struct {
	class, field, script string
	scripts, frames      []string
	styles, connects     []string
}

var widgetKinds = map[string]widgetKind{
	"turnstile": {class: "cf-turnstile", field: "cf-turnstile-response",
		script:  "https://challenges.cloudflare.com/turnstile/v0/api.js",
		scripts: []string{"https://challenges.cloudflare.com"}, frames: []string{"https://challenges.cloudflare.com"}},
	"hcaptcha": {class: "h-captcha", field: "h-captcha-response",
		script:  "https://js.hcaptcha.com/1/api.js",
		scripts: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"}, frames: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
		styles: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"}, connects: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"}},
	"recaptcha": {class: "g-recaptcha", field: "g-recaptcha-response",
		script:  "https://www.google.com/recaptcha/api.js",
		scripts: []string{"https://www.google.com/recaptcha/", "https://www.gstatic.com/recaptcha/"},
		frames:  []string{"https://www.google.com/recaptcha/", "https://recaptcha.google.com/recaptcha/"}},
}

// HasWidget reports whether a provider has a widget the page shows (privacypass has none: the
// browser presents its tokens).
func HasWidget(provider string) bool { _, ok := widgetKinds[provider]; return ok }

// compiledWidget is a Widget ready for the page: its markup and its CSP sources.
type compiledWidget struct {
	kind   widgetKind
	markup string // before the label's text
	after  string // after it: the widget's element and the provider's script
	csp    map[string]string
}

func compileWidget(w *Widget) (*compiledWidget, error) {
	if w == nil {
		return nil, nil
	}
	kind, ok := widgetKinds[w.Provider]
	if !ok {
		return nil, fmt.Errorf("page: no widget for provider %q", w.Provider)
	}
	script := kind.script
	scripts, frames, styles, connects := kind.scripts, kind.frames, kind.styles, kind.connects
	if w.ScriptURL != "" {
		u, err := url.Parse(w.ScriptURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("page: widget_script_url %q is not an http(s) URL", w.ScriptURL)
		}
		origin := u.Scheme + "://" + u.Host
		script, scripts, frames, styles, connects = w.ScriptURL, []string{origin}, []string{origin}, nil, nil
	}
	c := &compiledWidget{kind: kind, csp: map[string]string{}}
	c.csp["script"] = strings.Join(scripts, " ")
	c.csp["frame"] = strings.Join(frames, " ")
	c.csp["style"] = strings.Join(styles, " ")
	c.csp["connect"] = strings.Join(connects, " ")
	c.markup = `<div id="sk-widget" class="sk-widget" data-field="` + html.EscapeString(kind.field) + `"><p id="sk-widget-label" class="sk-detail">`
	var b strings.Builder
	b.WriteString(`</p><div class="` + kind.class + `" data-sitekey="` + html.EscapeString(w.SiteKey) + `"`)
	if w.Action != "" {
		b.WriteString(` data-action="` + html.EscapeString(w.Action) + `"`)
	}
	b.WriteString(`></div></div>` + "\n" + `<script src="` + html.EscapeString(script) + `" async defer></script>` + "\n")
	c.after = b.String()
	return c, nil
}
