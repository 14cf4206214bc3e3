package testlayout

// Which packages link what, as the build itself sees it (go list -deps): the cores link no
// Caddy, and the draw does not link the room. These tests run `go list`, whose inputs go
// test's cache cannot see, so make unit runs this package with -count=1 (scripts/unit.sh).

import (
	"os/exec"
	"strings"
	"testing"
)

// The room's core imports no Caddy, and neither do its tests: `go list
// -deps` is the build's own view of what the package, and its test binary, link.
func TestTheRoomCoreLinksNoCaddy(t *testing.T) {
	const pkg = "github.com/seckilledge/seckill/caddymodule/room/core"
	for _, args := range [][]string{{"list", "-deps", pkg}, {"list", "-deps", "-test", pkg}} {
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go %s listed nothing", strings.Join(args, " "))
		}
		var seen bool
		for _, d := range deps {
			seen = seen || d == pkg
			if strings.HasPrefix(d, "github.com/caddyserver/") {
				t.Errorf("go %s: caddymodule/room/core links %s", strings.Join(args, " "), d)
			}
		}
		if !seen {
			t.Errorf("go %s does not list the package itself: %v", strings.Join(args, " "), deps)
		}
	}
}

// The verifier, the keys and the caches link no Caddy, and neither do their tests:
// `go list -deps` is the build's own view of what the package, and its test binary, link.
func TestTheIdentityCoreLinksNoCaddy(t *testing.T) {
	const pkg = "github.com/seckilledge/seckill/caddymodule/identity/core"
	for _, args := range [][]string{{"list", "-deps", pkg}, {"list", "-deps", "-test", pkg}} {
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		deps := strings.Fields(string(out))
		var seen bool
		for _, d := range deps {
			seen = seen || d == pkg
			if strings.HasPrefix(d, "github.com/caddyserver/") {
				t.Errorf("go %s: caddymodule/identity/core links %s", strings.Join(args, " "), d)
			}
		}
		if !seen {
			t.Errorf("go %s does not list the package itself: %v", strings.Join(args, " "), deps)
		}
	}
}

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

// The shared core and the cores that use it link no Caddy, nor do their tests (the
// handlers' shared code lives in caddymodule/handler, whose Caddy-free part is this one). `go
// list -deps` is the build's own view of what a package and its test binary link.
func TestTheSharedCorePartsLinkNoCaddy(t *testing.T) {
	const mod = "github.com/seckilledge/seckill/caddymodule/"
	for _, pkg := range []string{"handler/core", "gate/core", "token/core", "throttle/core", "room/core", "sealed"} {
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

// The draw's core (its sales' settings and entry rate over a store port) imports no Caddy,
// and neither do its tests.
func TestTheDrawCoreLinksNoCaddy(t *testing.T) {
	const pkg = "github.com/seckilledge/seckill/caddymodule/draw/core"
	out, err := exec.Command("go", "list", "-deps", "-test", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test %s: %v\n%s", pkg, err, out)
	}
	deps := strings.Fields(string(out))
	var seen bool
	for _, d := range deps {
		seen = seen || d == pkg
		if strings.HasPrefix(d, "github.com/caddyserver/") {
			t.Errorf("caddymodule/draw/core or its tests link %s", d)
		}
	}
	if !seen {
		t.Fatalf("go list -deps -test does not list the package itself: %v", deps)
	}
}
