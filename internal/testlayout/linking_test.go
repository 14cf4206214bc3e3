package testlayout

// Which packages link what, as the build itself sees it (go list): the cores link no Caddy,
// and the draw does not link the room. These tests run `go list`, whose inputs go test's
// cache sees through Watch: they run again after a change to any Go file of the module.

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// listing is what `go list -test` says of every package of the module under one set of build
// tags: for each package, and for each test binary (p.test), the packages it links (.Deps: a
// package's own dependencies, or a test binary's, its tests' and the package's together).
type listing struct {
	deps map[string][]string
	err  error
	out  []byte
}

var (
	listOnce sync.Once
	listings [2]listing // [0] the pure tier (no tags), [1] with the integration tag
	watchErr error
)

// links is the listing of the pure tier (integration false) or of both tiers (true). Each go
// list reads the whole module, so the tests share two of them, run side by side the first
// time one is asked for, after Watch has shown go test's cache what they read.
func links(t *testing.T, integration bool) map[string][]string {
	t.Helper()
	root := moduleRoot(t)
	listOnce.Do(func() {
		if watchErr = Watch(root); watchErr != nil {
			return
		}
		var wg sync.WaitGroup
		for i := range listings {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := []string{"list", "-test", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}
				if i == 1 {
					args = append(args, "-tags", Tag)
				}
				out, err := exec.Command("go", append(args, mod+"...")...).CombinedOutput()
				l := &listings[i]
				l.out, l.err = out, err
				l.deps = map[string][]string{}
				for _, line := range strings.Split(string(out), "\n") {
					if f := strings.Fields(line); len(f) > 0 {
						l.deps[f[0]] = f[1:]
					}
				}
			}()
		}
		wg.Wait()
	})
	if watchErr != nil {
		t.Fatalf("watching the module's directories: %v", watchErr)
	}
	l := listings[0]
	if integration {
		l = listings[1]
	}
	if l.err != nil {
		t.Fatalf("go list -test (integration %v): %v\n%s", integration, l.err, l.out)
	}
	return l.deps
}

// The draw shares the sealed values with the waiting room through caddymodule/sealed, not by
// importing the room: the draw's build must not link the room, and the
// sealed values must not link Caddy. `go list` is the build's own view of it.
func TestTheDrawDoesNotLinkTheRoomAndTheSealedValuesLinkNoCaddy(t *testing.T) {
	t.Parallel()
	const mod = "github.com/seckilledge/seckill/caddymodule/"
	all := links(t, false)
	deps := func(pkg string) []string {
		d, ok := all[pkg]
		if !ok {
			t.Fatalf("go list does not list %s", pkg)
		}
		return d
	}
	for _, d := range deps(mod + "draw") {
		if d == mod+"room" || strings.HasPrefix(d, mod+"room/") {
			t.Errorf("caddymodule/draw links %s", d)
		}
	}
	for _, d := range deps(mod + "sealed") {
		if strings.HasPrefix(d, "github.com/caddyserver/") {
			t.Errorf("caddymodule/sealed links %s", d)
		}
	}
}

// The cores link no Caddy, nor do their tests: the shared one (the handlers' shared code lives
// in caddymodule/handler, whose Caddy-free part is handler/core), the gate's, the token's, the
// throttle's, the room's and the draw's (a room or a draw over its store port), the identity's
// (the verifier, the keys and the caches), the cors handler's allow list, the sealed values and
// the outbox relay (its durations are its own type; the app parses its Caddyfile). `go
// list -test` is the build's own view of what a package and its test binary link.
func TestTheSharedCorePartsLinkNoCaddy(t *testing.T) {
	t.Parallel()
	const mod = "github.com/seckilledge/seckill/caddymodule/"
	all := links(t, false)
	for _, pkg := range []string{"handler/core", "gate/core", "token/core", "throttle/core", "room/core", "draw/core", "identity/core", "cors/core", "sealed", "relay"} {
		deps, seen := all[mod+pkg]
		if !seen {
			t.Errorf("go list does not list caddymodule/%s", pkg)
		}
		// The test binary, when the package has tests in this tier: its tests, the package
		// (recompiled with them when they are in it) and what they link.
		testDeps, tested := all[mod+pkg+".test"]
		if tested && !slices.ContainsFunc(testDeps, func(d string) bool { return d == mod+pkg || strings.HasPrefix(d, mod+pkg+" [") }) {
			t.Errorf("the test binary of caddymodule/%s does not link the package", pkg)
		}
		for _, d := range slices.Concat(deps, testDeps) {
			if strings.HasPrefix(d, "github.com/caddyserver/") {
				t.Errorf("caddymodule/%s or its test binary links %s", pkg, d)
			}
		}
	}
}

// The backend links no Caddy: it serves the fairness report's page with
// caddymodule/reportpage (whose texts are the gateway pages' catalogues), which must stay
// free of Caddy, as must the catalogues' kit it reads.
func TestTheBackendLinksNoCaddyThroughTheReportPage(t *testing.T) {
	t.Parallel()
	const mod = "github.com/seckilledge/seckill/"
	deps, ok := links(t, false)[mod+"cmd/seckill-backend"]
	if !ok {
		t.Fatalf("go list does not list cmd/seckill-backend")
	}
	if !slices.Contains(deps, mod+"caddymodule/reportpage") {
		t.Errorf("cmd/seckill-backend does not link caddymodule/reportpage: the report has no page")
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/caddyserver/") {
			t.Errorf("cmd/seckill-backend links %s", d)
		}
	}
}

// MaxCaddyTestBinaries is how many test binaries may link Caddy, over both tiers: the
// conformance binary (internal/conformance: the Caddy-facing contract of every module, the
// Caddyfiles, the metric names, and the tests of the handlers' shared kit, caddymodule/handler),
// one per handler whose tests need it in the process (gate, token, throttle, room, draw,
// identity), the app's (caddymodule) and the system tests, which run a gateway in the
// process. Linking Caddy is most of what building a test binary costs, and a change to a
// handler relinks every binary that links it; a test that only adapts a Caddyfile or checks
// Validate goes in conformance, a test of logic in the handler's Caddy-free core
// (CONTRIBUTING.md, "Tests").
const MaxCaddyTestBinaries = 9

// The test binaries that link Caddy are at most MaxCaddyTestBinaries, counted over both tiers
// as `go list -test` sees them (a package's test binary, p.test, links what its tests and
// the package import), and the Caddy-free cores and the relay are not among them.
func TestFewTestBinariesLinkCaddy(t *testing.T) {
	t.Parallel()
	const caddy = "github.com/caddyserver/caddy/v2"
	linking := map[string]bool{}
	for _, integration := range []bool{false, true} {
		for pkg, deps := range links(t, integration) {
			if test, ok := strings.CutSuffix(pkg, ".test"); ok && slices.Contains(deps, caddy) {
				linking[strings.TrimPrefix(test, mod)] = true
			}
		}
	}
	var names []string
	for p := range linking {
		names = append(names, p)
	}
	slices.Sort(names)
	if len(names) > MaxCaddyTestBinaries {
		t.Errorf("%d test binaries link Caddy, at most %d may: %s\n(move a test that adapts a Caddyfile or checks Validate to internal/conformance, a test of logic to the handler's core)",
			len(names), MaxCaddyTestBinaries, strings.Join(names, " "))
	}
	for _, free := range []string{"caddymodule/relay", "caddymodule/cors/core", "caddymodule/botcheck", "caddymodule/internal/roomkit", "caddymodule/internal/placeholder", "deploy/helm"} {
		if linking[free] {
			t.Errorf("the test binary of %s links Caddy", free)
		}
	}
	if !linking["internal/conformance"] {
		t.Errorf("internal/conformance's test binary does not link Caddy: the count reads nothing (%s)", strings.Join(names, " "))
	}
	t.Logf("%d test binaries link Caddy: %s", len(names), strings.Join(names, " "))
}
