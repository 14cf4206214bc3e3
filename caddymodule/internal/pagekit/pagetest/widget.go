package pagetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botchecktest"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
)

// Widget is a page whose bot check is a provider's widget, a botchecktest.Turnstile's
// stand-in, for WidgetSweep.
type Widget struct {
	Kind pagekit.Kind
	// Turnstile is the stand-in the page's gateway names, read once Page returns.
	Turnstile *botchecktest.Turnstile
	// Page sets the page up (its gateway, its sale) and is its URL, without its query.
	Page func(t *testing.T) string
	// Ready, when set, is the state the page waits in for the buyer to enter; Enter does what
	// he does there (nil: the page enters by itself once the widget answers).
	Ready string
	Enter func(t *testing.T, ctx context.Context, lang string)
	// Entered are the states of a page that entered.
	Entered []string
}

// WidgetSweep checks a page with a provider's widget in each of Languages, in turn in one
// tab of a browser context of its own, as a parallel test: the page's CSP lets it load the
// widget's script and frames from the stand-in's origin, and the page at
// Page?lang=<lang>&user=<a user of the language> shows the widget with its label in the
// language (common.challenge, translated) and enters with the widget's token, checked by the
// stand-in siteverify once per entry.
func WidgetSweep(t *testing.T, w Widget) {
	t.Helper()
	if testing.Short() {
		t.Skip("chromium: not in -short")
	}
	t.Parallel()
	kit, err := pagekit.New(w.Kind, pagekit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	page := w.Page(t)
	sv := w.Turnstile.Siteverify
	// The CSP names the widget's origin, and the page the widget's element and script.
	AllowsWidget(t, page+"?lang=en", w.Turnstile.Script.URL)

	ctx := Context(t, 5*time.Minute)
	calls := sv.Calls.Load()
	waitState := func(lang string, ok func(string) bool, never string) {
		t.Helper()
		for s := StateIn(t, ctx); !ok(s); s = StateIn(t, ctx) {
			if ctx.Err() != nil {
				t.Fatalf("the page (%s) is %q, never %s (problem: %q)", lang, s, never, TextIn(t, ctx, "problem"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, l := range Languages {
		user := "w-" + strings.ToLower(strings.ReplaceAll(l.Lang, "-", ""))
		if _, err := chromedp.Run(ctx, chromedp.Navigate(page+"?lang="+l.Lang+"&user="+user)); err != nil {
			t.Fatalf("navigate (%s): %v", l.Lang, err)
		}
		want := kit.Message(l.Lang, "common.challenge")
		if want == "" || (l.Lang != "en" && want == kit.Message("en", "common.challenge")) {
			t.Fatalf("the catalogue of %s has no translated common.challenge: %q", l.Lang, want)
		}
		if w.Ready != "" {
			waitState(l.Lang, func(s string) bool { return s == w.Ready }, "ready to enter")
		}
		if got := TextIn(t, ctx, "widget-label"); got != want {
			t.Fatalf("the widget's label in %s is %q, want %q", l.Lang, got, want)
		}
		// The stand-in fills the token; the page enters with it.
		if w.Enter != nil {
			w.Enter(t, ctx, l.Lang)
		}
		waitState(l.Lang, func(s string) bool { return slices.Contains(w.Entered, s) }, "entered")
		if got := sv.Last().Get("response"); got != "human" {
			t.Fatalf("siteverify was asked about %q, want the widget's token", got)
		}
		if n := sv.Calls.Load() - calls; n != int64(i+1) {
			t.Fatalf("after %d pages' entries siteverify was asked %d times, want once per entry", i+1, n)
		}
	}
}
