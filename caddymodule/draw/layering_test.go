package draw

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

// The draw's core imports no Caddy, and neither do its tests (the test binary's deps).
func TestTheDrawCoreLinksNoCaddy(t *testing.T) {
	const pkg = "github.com/seckilledge/seckill/caddymodule/draw/core"
	out, err := exec.Command("go", "list", "-deps", "-test", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test %s: %v\n%s", pkg, err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, pkg) {
		t.Fatalf("go list -deps -test does not list the package itself: %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/caddyserver/") {
			t.Errorf("caddymodule/draw/core or its tests link %s", d)
		}
	}
}
