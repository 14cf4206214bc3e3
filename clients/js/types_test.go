//go:build integration

package clientjs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/internal/npmtools"
)

// tscFlags type-check seckill.js as TypeScript users' editors do, in strict mode.
var tscFlags = []string{"--allowJs", "--checkJs", "--strict", "--target", "es2022", "--module", "nodenext",
	"--moduleResolution", "nodenext", "--lib", "es2022,dom", "--types", "node"}

func tscWithNode(t *testing.T, tsc string, args ...string) string {
	return npmtools.Run(t, ".", tsc, append(append([]string{"--typeRoots", filepath.Join(npmtools.Modules(), "@types")}, tscFlags...), args...)...)
}

// seckill.js type-checks under `tsc --checkJs --strict` with no error, and seckill.d.ts is
// what tsc emits from its JSDoc today (`make js-types` writes it), so the types users get
// are the code's.
func TestTheClientTypeChecksStrictAndShipsItsDeclarations(t *testing.T) {
	t.Parallel()
	tsc, _ := npmtools.Need(t, "tsc")
	tscWithNode(t, tsc, "--noEmit", "seckill.js")
	out := t.TempDir()
	tscWithNode(t, tsc, "--declaration", "--emitDeclarationOnly", "--outDir", out, "seckill.js")
	want, err := os.ReadFile(filepath.Join(out, "seckill.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("seckill.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("clients/js/seckill.d.ts is not what tsc emits from seckill.js: run `make js-types`")
	}
	lic, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(lic, root) {
		t.Error("clients/js/LICENSE differs from the repository's LICENSE")
	}
}

// The package as npm packs it, installed where a shop's project would have it: publint finds
// nothing to say about it (strict: warnings too), a strict TypeScript program that imports it
// compiles without Node's types (a browser front end), and Node loads it both by import and
// by require (the engines' promise).
func TestTypeScriptUsersCanImportThePackedClient(t *testing.T) {
	t.Parallel()
	tsc, node := npmtools.Need(t, "tsc")
	publint, _ := npmtools.Need(t, "publint")
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is needed: %v", err)
	}
	dir := t.TempDir()
	packed := strings.TrimSpace(lastLine(npmtools.Run(t, ".", npm, "pack", "--silent", "--pack-destination", dir)))
	pkg := filepath.Join(dir, "node_modules", "@seckill", "client")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	npmtools.Run(t, dir, "tar", "-xzf", filepath.Join(dir, packed), "-C", pkg, "--strip-components=1")
	for _, f := range []string{"seckill.js", "seckill.d.ts", "LICENSE", "README.md", "package.json"} {
		if _, err := os.Stat(filepath.Join(pkg, f)); err != nil {
			t.Errorf("the packed package lacks %s", f)
		}
	}
	if out := npmtools.Run(t, pkg, publint, "run", ".", "--strict", "--pack", "false"); !strings.Contains(out, "All good") {
		t.Errorf("publint:\n%s", out)
	}

	src, err := os.ReadFile("test/types/consumer.ts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "consumer.ts"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	tsconfig := `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "nodenext",
  "moduleResolution": "nodenext", "lib": ["es2022", "dom"], "types": [], "noUncheckedIndexedAccess": true,
  "exactOptionalPropertyTypes": true, "skipLibCheck": false}, "files": ["consumer.ts"]}`
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module", "private": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	npmtools.Run(t, dir, tsc, "-p", ".")

	for _, script := range []string{
		`import("@seckill/client").then((m) => { if (typeof m.Client !== "function" || typeof m.solve !== "function") process.exit(1); })`,
		`const m = require("@seckill/client"); if (typeof m.Client !== "function" || typeof m.SeckillError !== "function") process.exit(1);`,
	} {
		cmd := exec.Command(node, "--input-type=commonjs", "-e", script)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("node -e %s: %v\n%s", script, err, out)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
