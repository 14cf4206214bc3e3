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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
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

// NewBrowser starts chromium for t (closed when t ends) and reads axe-core.
func NewBrowser(t *testing.T) *Browser {
	t.Helper()
	bin := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[chromedp.Void]("1")); err != nil {
		cancelB()
		cancelA()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() { cancelB(); cancelA() })
	return &Browser{ctx: bctx, axe: axeSource(t)}
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

// recorder keeps what the page says (#sk-status) and the states it goes through
// (<body data-state>), however fast they pass.
const recorder = `window.__said = []; window.__states = [];
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
	ctx, cancel := chromedp.NewContext(b.ctx)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelT(); cancel() })
	var vp []chromedp.EmulateViewportOption
	if mobile {
		vp = append(vp, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height, vp...)); err != nil {
		t.Fatalf("tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": lang}}); err != nil {
		t.Fatalf("tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recorder}); err != nil {
		t.Fatalf("tab: %v", err)
	}
	return &Tab{t: t, Ctx: ctx, axe: b.axe}
}

// Tab is one page under test.
type Tab struct {
	t   *testing.T
	Ctx context.Context
	axe string
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
	return JS[bool](p, fmt.Sprintf(`(() => { const e = document.getElementById("sk-%s"); return !!e && !e.hidden && e.offsetParent !== null; })()`, id))
}

// State is the page's <body data-state>.
func (p *Tab) State() string {
	return JS[string](p, `document.body ? document.body.dataset.state || "" : ""`)
}

// Said is everything #sk-status said, in order.
func (p *Tab) Said() []string { return JS[[]string](p, `window.__said || []`) }

// States are the states the page went through, in order.
func (p *Tab) States() []string { return JS[[]string](p, `window.__states || []`) }

// WaitState waits until the page is in state (failing with what it said when it is not by
// the tab's deadline).
func (p *Tab) WaitState(state string) {
	p.t.Helper()
	for p.State() != state {
		if p.Ctx.Err() != nil {
			p.t.Fatalf("the page never reached %q: states %v, said %q, problem %q", state, p.States(), p.Said(), p.Text("problem"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitText waits until #sk-<id> contains want.
func (p *Tab) WaitText(id, want string) {
	p.t.Helper()
	for !strings.Contains(p.Text(id), want) {
		if p.Ctx.Err() != nil {
			p.t.Fatalf("#sk-%s is %q, want %q (states %v)", id, p.Text(id), want, p.States())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Click clicks #sk-<id>.
func (p *Tab) Click(id string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.Ctx, chromedp.Click(chromedp.ID("sk-"+id))); err != nil {
		p.t.Fatalf("click #sk-%s: %v", id, err)
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
