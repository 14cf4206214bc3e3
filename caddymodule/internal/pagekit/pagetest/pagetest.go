// Package pagetest drives the gateway's pages in Debian's headless chromium for the room's
// and the draw's tests: a tab per case (a language, a screen size), a log of what the page
// said and the states it went through (recorded by a MutationObserver the browser adds
// before the page's own script, outside the page's CSP), and axe-core, the accessibility
// engine from the npm registry (scripts/stack.sh installs it under .run/npm), run on every
// state: no serious or critical violation passes.
package pagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	clientjs "github.com/seckilledge/seckill/clients/js"
)

// Chromium is the path of Debian's headless browser. Missing, the test fails: scripts/stack.sh
// installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install it (apt-get install -y chromium, or scripts/stack.sh start)")
	return ""
}

// Browser is one chromium for a test; Tab opens pages in it.
type Browser struct {
	ctx context.Context
	axe string
}

// NewBrowser starts chromium for t (closed when t ends; in a package that shares one, Main, a
// browser context of its own in it) and reads axe-core. Under -short
// it skips t instead: the short runs start no browser.
func NewBrowser(t *testing.T) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("chromium: not in -short")
	}
	bctx := start(t)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[chromedp.Void]("1")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &Browser{ctx: bctx, axe: axeSource(t)}
}

// Context is a tab of a chromium of its own (of a browser context of its own in a package
// that shares one chromium, Main), with a profile of its own (another device's storage and
// keys), open for d at most and closed when t ends: for a test that drives the page with
// chromedp itself.
func Context(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(start(t), d)
	t.Cleanup(cancel)
	return ctx
}

// start starts chromium with a fresh profile, closed when t ends; in a package that shares
// one chromium (Main), a fresh browser context of it, disposed of when t ends.
func start(t *testing.T) context.Context {
	t.Helper()
	if s := sharedBrowser(t); s != nil {
		ctx, cancel := chromedp.NewContext(s, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		return ctx
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), options(t, t.TempDir())...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	return bctx
}

// options are the flags of a headless chromium whose profile is in dir.
func options(t *testing.T, dir string) []chromedp.ExecAllocatorOption {
	t.Helper()
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(dir))
}

// TextIn is the text of #sk-<id> in the page of ctx, shown or not ("" when it is missing).
func TextIn(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.getElementById("sk-%s") || {}).textContent || ""`, id)))
	if err != nil {
		t.Fatalf("reading #sk-%s: %v", id, err)
	}
	return v
}

// StateIn is the page's <body data-state> in the page of ctx.
func StateIn(t *testing.T, ctx context.Context) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](stateJS))
	if err != nil {
		t.Fatalf("reading the page's state: %v", err)
	}
	return v
}

// AxePath is where axe-core is: $SECKILL_AXE_JS, else npm/node_modules/axe-core/axe.min.js in
// the stack's directory ($SECKILL_RUN_DIR, as scripts/stack.sh and internal/npmtools read it;
// else .run at the module's root), where scripts/stack.sh start installs it.
func AxePath() string {
	if p := os.Getenv("SECKILL_AXE_JS"); p != "" {
		return p
	}
	if d := os.Getenv("SECKILL_RUN_DIR"); d != "" {
		return filepath.Join(d, "npm", "node_modules", "axe-core", "axe.min.js")
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".run", "npm", "node_modules", "axe-core", "axe.min.js")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, ".run", "npm", "node_modules", "axe-core", "axe.min.js")
		}
	}
}

// axeSource reads axe-core; missing, the test fails (under -short it runs without).
func axeSource(t *testing.T) string {
	b, err := os.ReadFile(AxePath())
	if err != nil {
		if testing.Short() {
			t.Logf("no axe-core (%v): -short runs the pages without the accessibility check", err)
			return ""
		}
		t.Fatalf("no axe-core: %v (bash scripts/stack.sh test-tools installs it from the npm registry)", err)
	}
	return string(b)
}

// recorder keeps what the page says (#sk-status), the states it goes through (<body
// data-state>), however fast they pass, and what was clicked (a button's or link's id).
const recorder = `window.__said = []; window.__states = []; window.__clicks = [];
document.addEventListener("click", (e) => { const b = e.target && e.target.closest && e.target.closest("button, a"); window.__clicks.push(b ? b.id || b.textContent : e.target.nodeName); }, true);
new MutationObserver(() => {
  const s = document.getElementById("sk-status");
  if (s && window.__said[window.__said.length - 1] !== s.textContent) window.__said.push(s.textContent);
  const st = document.body && document.body.dataset.state;
  if (st && window.__states[window.__states.length - 1] !== st) window.__states.push(st);
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });`

// Tab is a new tab of width x height that sends Accept-Language lang, with the recorder; it
// closes when t ends (60 s at most).
func (b *Browser) Tab(t *testing.T, lang string, width, height int64, mobile bool) *Tab {
	t.Helper()
	return b.TabFor(t, 60*time.Second, lang, width, height, mobile)
}

// TabFor is Tab open for d at most: one tab a test takes through many pages (For bounds each
// part of it).
func (b *Browser) TabFor(t *testing.T, d time.Duration, lang string, width, height int64, mobile bool) *Tab {
	t.Helper()
	tab, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	// The tab is set up on its own context and the deadline comes after: a tab lives as long as
	// the context of the first action run on it, and a wait that ran out must still be able to
	// read the page (Tab.page).
	var vp []chromedp.EmulateViewportOption
	if mobile {
		vp = append(vp, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(tab, chromedp.EmulateViewport(width, height, vp...)); err != nil {
		t.Fatalf("tab: %v", err)
	}
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("tab: %v", err)
	}
	if _, err := chromedp.Call(tab, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": lang}}); err != nil {
		t.Fatalf("tab: %v", err)
	}
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recorder}); err != nil {
		t.Fatalf("tab: %v", err)
	}
	ctx, cancelT := context.WithTimeout(tab, d)
	t.Cleanup(cancelT)
	return &Tab{t: t, Ctx: ctx, axe: b.axe, root: tab}
}

// Tab is one page under test.
type Tab struct {
	t   *testing.T
	Ctx context.Context
	axe string
	// root is the browser tab's own context, without this case's deadline: what a wait that
	// ran out reports (the states, what the page said) is read through it.
	root context.Context
}

// For is the same tab for the (sub)test t, with its waits bounded by d: a part of a sweep
// that fails or hangs fails alone, and the tab goes on to the next.
func (p *Tab) For(t *testing.T, d time.Duration) *Tab {
	ctx, cancel := context.WithTimeout(p.Ctx, d)
	t.Cleanup(cancel)
	return &Tab{t: t, Ctx: ctx, axe: p.axe, root: p.root}
}

// SetLanguage makes the tab send Accept-Language lang from its next request on.
func (p *Tab) SetLanguage(lang string) {
	p.t.Helper()
	if _, err := chromedp.Call(p.Ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": lang}}); err != nil {
		p.t.Fatalf("setting Accept-Language: %v", err)
	}
}

// AddScript runs src in every document the tab opens from now on, before the page's own
// script (a spy of the test's).
func (p *Tab) AddScript(src string) {
	p.t.Helper()
	if _, err := chromedp.Call(p.Ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		p.t.Fatalf("adding a script: %v", err)
	}
}

// Go navigates to url.
func (p *Tab) Go(url string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.Ctx, chromedp.Navigate(url)); err != nil {
		p.t.Fatalf("navigate %s: %v", url, err)
	}
}

// JS evaluates expr in the page (awaiting a promise).
func JS[T any](p *Tab, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %.200s: %v", expr, err)
	}
	return v
}

// Text is the text of #sk-<id> ("" when it is missing).
func (p *Tab) Text(id string) string {
	p.t.Helper()
	return JS[string](p, fmt.Sprintf(`(document.getElementById("sk-%s") || {}).textContent || ""`, id))
}

// Visible reports whether #sk-<id> is shown.
func (p *Tab) Visible(id string) bool {
	p.t.Helper()
	return JS[bool](p, visibleJS(id))
}

// WaitShown waits until #sk-<id> is on the page (failing by the tab's deadline with what the
// page went through): a button the page shows once an answer has come, such as Buy.
func (p *Tab) WaitShown(id string) {
	p.t.Helper()
	until(p, fmt.Sprintf("#sk-%s shown", id), visibleJS(id), func(v bool) bool { return v })
}

// visibleJS is true when #sk-<id> exists, is not hidden and is laid out.
func visibleJS(id string) string {
	return fmt.Sprintf(`(() => { const e = document.getElementById("sk-%s"); return !!e && !e.hidden && e.offsetParent !== null; })()`, id)
}

// State is the page's <body data-state>.
func (p *Tab) State() string {
	p.t.Helper()
	return JS[string](p, stateJS)
}

const stateJS = `document.body ? document.body.dataset.state || "" : ""`

// Said is everything #sk-status said, in order.
func (p *Tab) Said() []string { p.t.Helper(); return JS[[]string](p, `window.__said || []`) }

// States are the states the page went through, in order.
func (p *Tab) States() []string { p.t.Helper(); return JS[[]string](p, `window.__states || []`) }

// peek evaluates expr without failing, within a few seconds of the tab's own context: what
// a wait that ran out by its case's deadline can still tell about the page.
func peek[T any](p *Tab, expr string) (T, error) {
	root := p.root
	if root == nil {
		root = p.Ctx
	}
	ctx, cancel := context.WithTimeout(root, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// page is what a failed wait reports of the page: its states, what it said, what was
// clicked, its problem.
func (p *Tab) page() string {
	v, err := peek[string](p, `JSON.stringify({states: window.__states || [], said: window.__said || [], clicks: window.__clicks || [], problem: (document.getElementById("sk-problem") || {}).textContent || ""})`)
	if err != nil {
		return "(the page did not answer: " + err.Error() + ")"
	}
	return v
}

// until polls expr in the page until ok accepts its value, failing by the tab's deadline with
// what was awaited, the last value seen and what the page went through.
func until[T any](p *Tab, what, expr string, ok func(T) bool) {
	p.t.Helper()
	var last T
	for {
		ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
		cancel()
		if err == nil {
			if ok(v) {
				return
			}
			last = v
		}
		if p.Ctx.Err() != nil {
			p.t.Fatalf("%s: never, the last value %#v; the page: %s", what, last, p.page())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitState waits until the page is in state (failing with what it said when it is not by
// the tab's deadline).
func (p *Tab) WaitState(state string) {
	p.t.Helper()
	until(p, fmt.Sprintf("the page reaching %q", state), stateJS, func(v string) bool { return v == state })
}

// WaitText waits until #sk-<id> contains want.
func (p *Tab) WaitText(id, want string) {
	p.t.Helper()
	until(p, fmt.Sprintf("#sk-%s containing %q", id, want), fmt.Sprintf(`(document.getElementById("sk-%s") || {}).textContent || ""`, id),
		func(v string) bool { return strings.Contains(v, want) })
}

// Click taps #sk-<id> as a finger does, at the middle of where the button is, and fails at
// once with what the tap reached when that was not the button: a page that moves its buttons
// under the finger (something above them appearing or going) loses a buyer's tap the same way.
func (p *Tab) Click(id string) {
	p.t.Helper()
	before := JS[int](p, `window.__clicks.length`)
	if _, err := chromedp.Run(p.Ctx, chromedp.Click(chromedp.ID("sk-"+id))); err != nil {
		p.t.Fatalf("click #sk-%s: %v", id, err)
	}
	if got := JS[[]string](p, fmt.Sprintf(`window.__clicks.slice(%d)`, before)); len(got) != 1 || got[0] != "sk-"+id {
		p.t.Fatalf("the tap on #sk-%s reached %q: the page moved under it; the page: %s", id, got, p.page())
	}
}

// Violation is one axe-core rule the page breaks.
type Violation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// Axe runs axe-core on the page as it is and fails on any serious or critical violation
// (label names the state). It returns the violations of lesser impact.
func (p *Tab) Axe(label string) []Violation {
	p.t.Helper()
	if p.axe == "" {
		return nil // -short without axe-core
	}
	if !JS[bool](p, `typeof window.axe === "object"`) {
		if _, err := chromedp.Run(p.Ctx, chromedp.Evaluate[bool](p.axe+";true")); err != nil {
			p.t.Fatalf("injecting axe-core: %v", err)
		}
	}
	raw := JS[string](p, `axe.run(document, { resultTypes: ["violations"] }).then((r) => JSON.stringify(r.violations))`)
	var vs []Violation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		p.t.Fatalf("axe-core's answer: %v", err)
	}
	var minor []Violation
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			p.t.Errorf("%s: axe-core: %s (%s): %s, at %v", label, v.ID, v.Impact, v.Help, v.Nodes)
			continue
		}
		minor = append(minor, v)
	}
	return minor
}

// Screenshot writes the whole page as a PNG to path.
func (p *Tab) Screenshot(path string) {
	p.t.Helper()
	png, err := chromedp.Run(p.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// overflow lists what does not fit the screen's width: the page wider than the viewport, an
// element whose content is wider than its box (scrollWidth past clientWidth: a word that
// cannot wrap, a row of buttons), a line of text past either edge of the viewport (left of
// it on a right-to-left page). A hidden element does not count; what a closed <details>
// holds does (the browser lays it out: it overflows once opened).
const overflow = `(() => {
  const out = [], w = document.documentElement.clientWidth;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "");
  const text = (e) => JSON.stringify((e.textContent || "").trim().slice(0, 80));
  if (document.documentElement.scrollWidth > w) out.push("the page is " + document.documentElement.scrollWidth + " px wide on a screen of " + w);
  for (const e of [document.body, ...document.body.querySelectorAll("*")]) {
    if (!e.getClientRects().length || getComputedStyle(e).visibility === "hidden") continue;
    if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth) out.push(name(e) + ": " + e.scrollWidth + " px of content in " + e.clientWidth + ": " + text(e));
  }
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode()); ) {
    if (!n.textContent.trim()) continue;
    const r = document.createRange();
    r.selectNodeContents(n);
    for (const b of r.getClientRects()) {
      if (b.width > 0 && (b.left < -0.5 || b.right > w + 0.5)) {
        out.push(name(n.parentElement) + ": text from " + Math.round(b.left) + " to " + Math.round(b.right) + " px on a screen of " + w + ": " + text(n));
        break;
      }
    }
  }
  return out;
})()`

// Overflowing lists what does not fit the tab's width (nothing, on a page that fits).
func (p *Tab) Overflowing() []string {
	p.t.Helper()
	return JS[[]string](p, overflow)
}

// Showing are those of texts the page shows: in its visible text, its title, or an
// aria-label (a progress bar's name, which a screen reader says).
func (p *Tab) Showing(texts []string) []string {
	p.t.Helper()
	if len(texts) == 0 {
		return nil
	}
	b, _ := json.Marshal(texts)
	return JS[[]string](p, `((texts) => { const shown = [document.body.innerText, document.title, ...[...document.querySelectorAll("[aria-label]")].map((e) => e.getAttribute("aria-label"))].join("\n"); return texts.filter((s) => shown.includes(s)); })(`+string(b)+`)`)
}

// Check is what every state of a page must pass, on any screen and in any language: axe-core
// (no serious or critical violation), nothing wider than the screen, and none of english
// shown (the English of messages the page's language says otherwise: Untranslated).
func (p *Tab) Check(label string, english []string) {
	p.t.Helper()
	p.Axe(label)
	for _, o := range p.Overflowing() {
		p.t.Errorf("%s: does not fit the screen: %s", label, o)
	}
	for _, s := range p.Showing(english) {
		p.t.Errorf("%s: the page shows the English %q", label, s)
	}
}

// Untranslated are the English texts a page in lang must not show: each English message's
// words between its placeholders (at least four letters of them), leaving out what lang's own
// messages hold too (a name such as JavaScript or drand). Nothing for English itself.
func Untranslated(k *pagekit.Kit, lang string) []string {
	if lang == "en" {
		return nil
	}
	own := strings.Join(k.Texts(lang), "\n")
	seen := map[string]bool{}
	var out []string
	for _, s := range k.Texts("en") {
		for _, part := range placeholder.Split(s, -1) {
			part = strings.TrimSpace(part)
			if letters(part) < 4 || seen[part] || strings.Contains(own, part) {
				continue
			}
			seen[part] = true
			out = append(out, part)
		}
	}
	return out
}

var placeholder = regexp.MustCompile(`\{\w+\}`)

func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// Fill is message with each {name} of kv (name, value pairs) replaced: what the page should say
// once its values are in.
func Fill(message string, kv ...string) string {
	for i := 0; i+1 < len(kv); i += 2 {
		message = strings.ReplaceAll(message, "{"+kv[i]+"}", kv[i+1])
	}
	return message
}

// Says reports whether text is message with some value in each of its {placeholders}.
func Says(text, message string) bool {
	parts := placeholder.Split(message, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.+`) + `$`).MatchString(text)
}

// WaitSays waits until #sk-<id> says message, with some value in each placeholder.
func (p *Tab) WaitSays(id, message string) {
	p.t.Helper()
	until(p, fmt.Sprintf("#sk-%s saying %q", id, message), fmt.Sprintf(`(document.getElementById("sk-%s") || {}).textContent || ""`, id),
		func(v string) bool { return Says(v, message) })
}

// RunsClient checks that kind's page runs the JavaScript client, clients/js/seckill.js, byte
// for byte: its one script opens with the client, and what follows, the kit's and the page's
// own code, speaks none of the protocol itself (no fetch, no worker but the kit's timer, no
// protocol header) and makes one Client, so the Chromium tests of the page are tests of the
// client.
func RunsClient(t *testing.T, kind pagekit.Kind) {
	t.Helper()
	kit, err := pagekit.New(kind, pagekit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	if err := kit.Serve(w, httptest.NewRequest("GET", "/seckill/s1/x", nil), "s1", []string{"S", "M"}, nil); err != nil {
		t.Fatal(err)
	}
	html := w.Body.String()
	const open = `<script type="module">`
	i, j := strings.Index(html, open), strings.Index(html, "</script>")
	if i < 0 || j < i || strings.Count(html, "<script") != 1 {
		t.Fatalf("want one module script in the page")
	}
	script := strings.TrimPrefix(html[i+len(open):j], "\n")
	own, ok := strings.CutPrefix(script, clientjs.Source)
	own = strings.TrimPrefix(own, "\n")
	if !ok {
		t.Fatalf("the page's script does not open with clients/js/seckill.js")
	}
	for _, s := range []string{"fetch(", "X-Seckill-", "crypto.", "XMLHttpRequest"} {
		if strings.Contains(own, s) {
			t.Errorf("the page's own code has %q: it speaks the protocol itself", s)
		}
	}
	// One worker of its own: the kit's timer, which keeps a background tab's polls on time.
	if !strings.HasPrefix(own, pagekit.JS) || strings.Count(own, "new Worker") != 1 || strings.Count(pagekit.JS, "new Worker") != 1 {
		t.Errorf("the page's own code starts workers beyond the kit's timer")
	}
	if strings.Count(own, "new Client(") != 1 {
		t.Errorf("the page's own code makes no Client")
	}
}

// Shop is a shop's own page for the room's and the draw's tests: its template
// (testdata/shop/page.html: the shop's header, footer and colours around our "main", the
// title <kind>.title) and its catalogues (English, and German with the shop's own heading of
// each page).
func Shop() *pagekit.Config {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "testdata", "shop")
	return &pagekit.Config{Template: filepath.Join(dir, "page.html"), Messages: []string{filepath.Join(dir, "messages")}}
}

// Screen is a screen a page is shown on.
type Screen struct {
	Name          string
	Width, Height int64
	Mobile        bool
}

// Screens are the two the docs' pictures show: a desktop and a phone (390 x 844).
var Screens = []Screen{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}}

// File is where the picture name (e.g. "room-waiting") of a page on s goes in dir:
// dir/name-<s.Name>.png, the names the docs link.
func (s Screen) File(dir, name string) string {
	return filepath.Join(dir, name+"-"+s.Name+".png")
}

// TabOn is Tab on screen s.
func (b *Browser) TabOn(t *testing.T, lang string, s Screen) *Tab {
	t.Helper()
	return b.Tab(t, lang, s.Width, s.Height, s.Mobile)
}

// ScreenshotDir is where `make screenshots` wants the pages' pictures ($SECKILL_SCREENSHOTS);
// without it the test that takes them is skipped.
func ScreenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SECKILL_SCREENSHOTS")
	if dir == "" {
		t.Skip("SECKILL_SCREENSHOTS is not set (make screenshots)")
	}
	return dir
}

// FromStart checks that inner starts where outer starts on the side a line of lang starts
// (the left, the right for a language written right to left), within a pixel; what names it.
func (p *Tab) FromStart(lang, what, outer, inner string) {
	p.t.Helper()
	side := "left"
	if pagekit.Direction(lang) == "rtl" {
		side = "right"
	}
	gap := JS[float64](p, fmt.Sprintf(`(() => { const o = document.querySelector(%q).getBoundingClientRect(), i = document.querySelector(%q).getBoundingClientRect(); return Math.abs(o.%s - i.%s); })()`, outer, inner, side, side))
	if gap > 1 {
		p.t.Errorf("%s does not start at the %s (%.0f px from it)", what, side, gap)
	}
}

// HasLanguage checks the page's <html lang dir>: lang, and its direction.
func (p *Tab) HasLanguage(lang string) {
	p.t.Helper()
	if got := JS[string](p, `document.documentElement.lang + " " + document.documentElement.dir`); got != lang+" "+pagekit.Direction(lang) {
		p.t.Fatalf("<html lang dir> = %q, want %s %s", got, lang, pagekit.Direction(lang))
	}
}

// AllowsWidget fails the test unless the page at url (asked for as a browser asks, HTML)
// answers 200 with a Content-Security-Policy that lets the page load the widget's script and
// frames from origin and still pins its own scripts by hash.
func AllowsWidget(t testing.TB, url, origin string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != http.StatusOK || !strings.Contains(csp, "script-src 'sha256-") ||
		!strings.Contains(csp, origin) || !strings.Contains(csp, "frame-src "+origin) {
		t.Fatalf("the page (%d): its CSP does not allow the widget's origin %s: %s", resp.StatusCode, origin, csp)
	}
}
