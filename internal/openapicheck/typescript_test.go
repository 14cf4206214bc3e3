//go:build integration

package openapicheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/internal/npmtools"
)

// A TypeScript shop can generate its types from docs/openapi.yaml with openapi-typescript and
// use them under tsc --strict: testdata/typescript/purchase.ts (a purchase with fetch, a switch
// on the open refusal code, a sale spec with durations in seconds) type-checks against them,
// and testdata/typescript/wrong.ts (a spec without its id, a boolean duration, an order status
// the document does not have) is refused on each of its three lines.
func TestATypeScriptClientGeneratedFromTheDocumentTypeChecks(t *testing.T) {
	gen, _ := npmtools.Need(t, "openapi-typescript")
	tsc, _ := npmtools.Need(t, "tsc")
	doc, err := filepath.Abs(DefaultPath())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	npmtools.Run(t, dir, gen, doc, "--output", filepath.Join(dir, "seckill-api.ts"))
	for _, f := range []string{"purchase.ts", "wrong.ts"} {
		src, err := os.ReadFile(filepath.Join("testdata", "typescript", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module", "private": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A browser front end's settings: strict, no Node types (fetch is the DOM's).
	for name, file := range map[string]string{"tsconfig.json": "purchase.ts", "tsconfig.wrong.json": "wrong.ts"} {
		cfg := `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "nodenext",
  "moduleResolution": "nodenext", "lib": ["es2022", "dom"], "types": [], "noUncheckedIndexedAccess": true,
  "exactOptionalPropertyTypes": true}, "files": ["` + file + `"]}`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npmtools.Run(t, dir, tsc, "-p", "tsconfig.json")

	cmd := exec.Command(tsc, "-p", "tsconfig.wrong.json")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("tsc accepted testdata/typescript/wrong.ts: the generated types let anything through")
	}
	for _, line := range []string{"wrong.ts(8,", "wrong.ts(9,", "wrong.ts(10,"} {
		if !strings.Contains(string(out), line) {
			t.Errorf("tsc did not refuse %s...:\n%s", line, out)
		}
	}
}
