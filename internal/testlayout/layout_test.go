package testlayout

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var fix = flag.Bool("fix", false, "add the integration build line to the test files that lack it")

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// Every test file that reaches a server, a browser or a built binary is in the integration
// tier, so make unit never needs the stack and make test runs it.
func TestEveryTestFileThatReachesAServerCarriesTheIntegrationTag(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	files, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d test files under %s: the scan is not seeing the module", len(files), root)
	}
	for _, f := range Misplaced(files) {
		if *fix {
			if err := AddTag(filepath.Join(root, f.Path)); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: added //go:build %s", f.Path, Tag)
			continue
		}
		t.Errorf("%s uses %s (a server, a browser or a built binary): it belongs to the integration tier. "+
			"Make its first line `//go:build %s` followed by a blank line (bash scripts/tag-tests.sh does it, "+
			"and tags the files that then stop compiling without the tag)", f.Path, strings.Join(f.Needs, ", "), Tag)
	}
}

func TestTheRuleReadsImportsBuildLinesAndNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a_test.go", "package p\n\nimport tv \"github.com/seckilledge/seckill/internal/testenv\"\n\nfunc f() { _ = tv.Redis; _ = tv.ID }\n")
	write("b_test.go", "//go:build integration && !race\n\npackage p\n\nimport \"github.com/seckilledge/seckill/internal/testenv\"\n\nfunc f() { _ = testenv.Postgres }\n")
	write("c_test.go", "package p\n\nimport \"github.com/seckilledge/seckill/internal/testenv\"\n\nfunc f() { _ = testenv.ID; _ = testenv.WaitFor }\n")
	write("d_test.go", "//go:build !race\n\n// Doc.\npackage p\n\nimport _ \"github.com/chromedp/chromedp\"\n")
	write("e_test.go", "//go:build integration || race\n\npackage p\n\nimport \"github.com/seckilledge/seckill/internal/testenv\"\n\nfunc f() { _ = testenv.Redis }\n")
	if err := os.MkdirAll(filepath.Join(dir, "internal", "testenv"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("internal/testenv/own_test.go", "package testenv\n\nfunc f() { StartRedis(nil); _ = ID(\"x\") }\n")
	files, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Misplaced(files) {
		got = append(got, f.Path+":"+strings.Join(f.Needs, ","))
	}
	want := "a_test.go:tv.Redis d_test.go:chromedp e_test.go:testenv.Redis internal/testenv/own_test.go:testenv.StartRedis"
	if strings.Join(got, " ") != want {
		t.Fatalf("misplaced: %q, want %q", strings.Join(got, " "), want)
	}
	for _, name := range []string{"a_test.go", "d_test.go", "e_test.go", "internal/testenv/own_test.go"} {
		if err := AddTag(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if files, _ = Scan(dir); len(Misplaced(files)) != 0 {
		t.Fatalf("still misplaced after AddTag: %+v", Misplaced(files))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "d_test.go"))
	if !strings.HasPrefix(string(b), "//go:build integration && (!race)\n\n// Doc.\npackage p") {
		t.Errorf("d_test.go became\n%s", b)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "a_test.go"))
	if !strings.HasPrefix(string(b), "//go:build integration\n\npackage p") {
		t.Errorf("a_test.go became\n%s", b)
	}
}
