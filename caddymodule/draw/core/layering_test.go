package core

import (
	"os/exec"
	"strings"
	"testing"
)

// The draw's core imports no Caddy, and neither do its tests: `go list -deps` is the build's
// own view of what the package, and its test binary, link.
func TestTheDrawCoreLinksNoCaddy(t *testing.T) {
	const pkg = "github.com/seckilledge/seckill/caddymodule/draw/core"
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
				t.Errorf("go %s: caddymodule/draw/core links %s", strings.Join(args, " "), d)
			}
		}
		if !seen {
			t.Errorf("go %s does not list the package itself: %v", strings.Join(args, " "), deps)
		}
	}
}
