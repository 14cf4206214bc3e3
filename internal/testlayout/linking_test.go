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
// (the verifier, the keys and the caches) and the sealed values. `go
// list -deps` is the build's own view of what a package and its test binary link.
func TestTheSharedCorePartsLinkNoCaddy(t *testing.T) {
	const mod = "github.com/seckilledge/seckill/caddymodule/"
	for _, pkg := range []string{"handler/core", "gate/core", "token/core", "throttle/core", "room/core", "draw/core", "identity/core", "sealed"} {
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
