package core

import (
	"os/exec"
	"strings"
	"testing"
)

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
