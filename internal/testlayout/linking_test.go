package testlayout

// Which packages link what, as the build itself sees it (go list -deps): the cores link no
// Caddy, and the draw does not link the room. These tests run `go list`, whose inputs go
// test's cache cannot see, so make unit runs this package with -count=1 (scripts/unit.sh).

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The draw shares the sealed values with the waiting room through caddymodule/sealed, not by
// importing the room: the draw's build must not link the room, and the
// sealed values must not link Caddy. `go list -deps` is the build's own view of it.
func TestTheDrawDoesNotLinkTheRoomAndTheSealedValuesLinkNoCaddy(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	const mod = "github.com/seckilledge/seckill/caddymodule/"
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
// list -deps` is the build's own view of what a package and its test binary link.
func TestTheSharedCorePartsLinkNoCaddy(t *testing.T) {
	const mod = "github.com/seckilledge/seckill/caddymodule/"
	for _, pkg := range []string{"handler/core", "gate/core", "token/core", "throttle/core", "room/core", "draw/core", "identity/core", "cors/core", "sealed", "relay"} {
		for _, args := range [][]string{{"list", "-deps", mod + pkg}, {"list", "-deps", "-test", mod + pkg}} {
			out, err := exec.Command("go", args...).CombinedOutput()
			if err != nil {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			deps := strings.Fields(string(out))
			var seen bool
			for _, d := range deps {
				seen = seen || d == mod+pkg
				if strings.HasPrefix(d, "github.com/caddyserver/") {
					t.Errorf("go %s: caddymodule/%s links %s", strings.Join(args, " "), pkg, d)
				}
			}
			if !seen {
				t.Errorf("go %s does not list the package itself", strings.Join(args, " "))
			}
		}
	}
}

// The backend links no Caddy: it serves the fairness report's page with
// caddymodule/reportpage (whose texts are the gateway pages' catalogues), which must stay
// free of Caddy, as must the catalogues' kit it reads.
func TestTheBackendLinksNoCaddyThroughTheReportPage(t *testing.T) {
	const mod = "github.com/seckilledge/seckill/"
	out, err := exec.Command("go", "list", "-deps", mod+"cmd/seckill-backend").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps cmd/seckill-backend: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
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
// Caddyfiles, the metric names), one per handler whose tests need it in the process (gate,
// token, throttle, room, draw, identity), the app's (caddymodule), the handlers' shared kit
// (caddymodule/handler) and the system tests, which run a gateway in the process. Linking
// Caddy is most of what building a test binary costs, and a change to a handler relinks every
// binary that links it; a test that only adapts a Caddyfile or checks Validate goes in
// conformance, a test of logic in the handler's Caddy-free core (CONTRIBUTING.md, "Tests").
const MaxCaddyTestBinaries = 10

// The test binaries that link Caddy are at most MaxCaddyTestBinaries, counted over both tiers
// as `go list -test` sees them (a package's test binary, p.test, links what its tests and
// the package import), and the Caddy-free cores and the relay are not among them.
func TestFewTestBinariesLinkCaddy(t *testing.T) {
	const caddy = "github.com/caddyserver/caddy/v2"
	linking := map[string]bool{}
	for _, tags := range [][]string{nil, {"-tags", Tag}} {
		args := append(append([]string{"list", "-test"}, tags...), "-f",
			`{{.ImportPath}}{{range .Deps}}{{if eq . "`+caddy+`"}} caddy{{end}}{{end}}`, mod+"...")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			pkg, linked := strings.CutSuffix(line, " caddy")
			if test, ok := strings.CutSuffix(pkg, ".test"); ok && linked {
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
