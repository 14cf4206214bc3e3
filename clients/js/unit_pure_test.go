package clientjs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The JavaScript client's unit tests (the proof of work against node:crypto, the polling
// loop's pace) need Node and no server. The test reads every .js file node will load first, so
// that go test's cache sees them: a changed script runs the test again.
func TestJavaScriptClientUnitTests(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (20 or later) is needed to test clients/js: %v", err)
	}
	for _, dir := range []string{".", "test"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".js") {
				if _, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	out, err := exec.Command(node, "--test", "test/unit.test.js").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/unit.test.js: %v\n%s", err, out)
	}
}
