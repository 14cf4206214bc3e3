package pagetest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
)

// A package whose TestMain runs its tests through Main shares one chromium between them:
// starting chromium takes a second or more on two busy cores, and a package of page tests
// would start it a dozen times. Each test still gets what it got from a chromium of its own:
// NewBrowser's tabs are new tabs (closed when the test ends, on the test's own origin), and
// Context's tab is in a browser context of its own (a fresh profile: its own storage,
// IndexedDB and keys, disposed of when the test ends). Without Main, every test starts its
// own chromium.
var shared struct {
	on     bool // set by Main before any test runs
	mu     sync.Mutex
	ctx    context.Context // the shared chromium's first tab; nil until a test asks
	dir    string          // its profile directory
	err    error           // why it did not start
	cancel func()
}

// Main runs m's tests with one chromium for all of them, started by the first test that asks
// for a browser and closed when the tests end, and returns m's exit code:
//
//	func TestMain(m *testing.M) { os.Exit(pagetest.Main(m)) }
func Main(m *testing.M) int {
	shared.on = true
	code := m.Run()
	shared.mu.Lock()
	if shared.cancel != nil {
		shared.cancel()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	return code
}

// sharedBrowser is the package's chromium (started at the first call), or nil when the
// package does not share one (no Main).
func sharedBrowser(t *testing.T) context.Context {
	t.Helper()
	if !shared.on {
		return nil
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctx == nil && shared.err == nil {
		shared.dir, shared.err = os.MkdirTemp("", "seckill-pagetest-chromium")
		if shared.err == nil {
			actx, cancelA := chromedp.NewExecAllocator(context.Background(), options(t, shared.dir)...)
			bctx, cancelB := chromedp.NewContext(actx)
			if _, err := chromedp.Run(bctx, chromedp.Evaluate[chromedp.Void]("1")); err != nil {
				cancelB()
				cancelA()
				shared.err = err
			} else {
				shared.ctx, shared.cancel = bctx, func() { cancelB(); cancelA() }
			}
		}
	}
	if shared.err != nil {
		t.Fatalf("starting the package's chromium: %v", shared.err)
	}
	return shared.ctx
}

// EachLanguageSideBySide runs f for each of Languages as a parallel subtest, two languages at
// a time, each on a tab of its own in a browser of t's (NewBrowser: skipped under -short) that
// sends the language's Accept-Language, width x
// height (mobile: a phone's touch and viewport), open for d at most from when its turn comes:
// a language's waits for the page's polls overlap the other's checks, and a language that
// fails or hangs fails alone. Two, not all nine: axe-core's checks are chromium's CPU, and
// nine pages checked at once on two busy cores starve one past its deadline. f makes what it
// serves itself (t is the language's subtest). The subtests end after the calling test's
// function returns: what it does once they are all done goes in a t.Cleanup, where the sweep
// logs how long it took, the browser's start included.
func EachLanguageSideBySide(t *testing.T, kit *pagekit.Kit, width, height int64, mobile bool, d time.Duration, f func(t *testing.T, s *Sweep)) {
	start := time.Now()
	b := NewBrowser(t)
	t.Cleanup(func() {
		t.Logf("%d languages, every state, in %v", len(Languages), time.Since(start).Round(time.Second))
	})
	turns := make(chan struct{}, 2)
	for _, l := range Languages {
		t.Run(l.Lang, func(t *testing.T) {
			t.Parallel()
			turns <- struct{}{}
			defer func() { <-turns }()
			f(t, &Sweep{Tab: b.TabFor(t, d, l.Accept, width, height, mobile), Kit: kit, Lang: l, English: Untranslated(kit, l.Lang)})
		})
	}
}
