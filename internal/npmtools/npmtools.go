// Package npmtools finds the npm tools some tests run, the tools integrators use on what we
// ship: TypeScript (tsc), publint, Redocly's CLI, openapi-typescript and the Standard Webhooks
// library. `bash scripts/stack.sh test-tools` (and `make stack`) installs them from the npm
// registry under .run/npm-tools, pinned to a major or minor version; nothing downloads while
// a test runs.
package npmtools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Dir is where the tools are installed: $SECKILL_NPM_TOOLS, else $SECKILL_RUN_DIR/npm-tools,
// else .run/npm-tools at the module's root.
func Dir() string {
	if d := os.Getenv("SECKILL_NPM_TOOLS"); d != "" {
		return d
	}
	if d := os.Getenv("SECKILL_RUN_DIR"); d != "" {
		return filepath.Join(d, "npm-tools")
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".run", "npm-tools")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, ".run", "npm-tools")
		}
	}
}

// Modules is Dir's node_modules (for NODE_PATH, typeRoots, or a library's files).
func Modules() string { return filepath.Join(Dir(), "node_modules") }

// Need returns the path of the installed command name (node_modules/.bin/name), and node's.
// A missing tool fails the test with how to install it; under -short it skips instead, so
// the pure tier runs on a machine where only Go and Node are installed.
func Need(t testing.TB, name string) (bin, node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed: %v (scripts/stack.sh installs Debian's nodejs)", err)
	}
	bin = filepath.Join(Modules(), ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		if testing.Short() {
			t.Skipf("%s is not installed (%v); bash scripts/stack.sh test-tools installs it", name, err)
		}
		t.Fatalf("%s is not installed: %v (bash scripts/stack.sh test-tools installs the npm tools under %s)", name, err, Dir())
	}
	return bin, node
}

// Run runs the tool bin with args in dir and returns its combined output; a failure fails
// the test with that output.
func Run(t testing.TB, dir, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "NODE_PATH="+Modules(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}
