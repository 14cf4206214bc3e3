// Package doccheck holds the tests that keep the docs true to the code: the README's layout
// table against the packages `go list` sees (layout_test.go); no issue number standing in for
// a reason, and every file path a doc names existing (claims_test.go); every Caddyfile option
// and metric a doc names defined by the code, and the README's dependency table true to go.mod
// (names_test.go). It has no code of its own.
package doccheck

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/internal/testlayout"
)

// layoutRule is how the first column of README.md's layout table names paths, said in every
// failure so whoever adds a row knows how to write it.
const layoutRule = `How the layout table names paths (README.md, "## Layout", first column):
  - each path in backquotes, several in one cell separated by commas;
  - a path whose first segment is a file or directory at the module root is written from the
    root (` + "`caddymodule/gate/core`, `internal/proc`, `lua/`" + `; a trailing slash is allowed);
  - any other path, with fewer segments than the cell's first, is its sibling: it replaces as
    many of the first path's last segments as it has (` + "`backend/sales`, `orders`" + ` is backend/orders;
    ` + "`caddymodule/gate/core`, `token/core`" + ` is caddymodule/token/core); write a child in full;
  - every Go package of ` + "`go list ./...`" + ` is named (the module root as ` + "`.`" + `), and every path
    named exists (a file or directory: docs and scripts may have rows too).`

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not in a module")
	}
	return filepath.Dir(gomod)
}

// packages is every package of the module, as paths from the module root ("." for the root),
// with the first sentence of its package doc. testlayout.Watch shows go test's cache what go
// list reads, so the test runs again when a package is added, removed or documented anew.
func packages(t *testing.T, root string) map[string]string {
	t.Helper()
	if err := testlayout.Watch(root); err != nil {
		t.Fatalf("watching the module's directories: %v", err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}} {{.Doc}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 2 {
			t.Fatalf("go list: %q", line)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(f[1], f[0]), "/")
		if rel == "" {
			rel = "."
		}
		if len(f) == 3 {
			pkgs[rel] = docPrefix.ReplaceAllString(strings.TrimSuffix(f[2], "."), "")
		} else {
			pkgs[rel] = ""
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return pkgs
}

// A row of the table: its first cell as written, and the paths it names.
type row struct {
	cell  string
	paths []string
}

var (
	quoted = regexp.MustCompile("`([^`]+)`")
	// docPrefix is how a package doc starts ("Package draw is ..."), which a row leaves out.
	docPrefix = regexp.MustCompile(`^(Package|Command) \S+ (is )?`)
)

// layoutRows reads the table under "## Layout" and resolves its first column by layoutRule.
// atRoot tells whether a first segment is a file or directory at the module root.
func layoutRows(t *testing.T, readme []byte, atRoot func(string) bool) []row {
	t.Helper()
	_, after, ok := bytes.Cut(readme, []byte("\n## Layout\n"))
	if !ok {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	var rows []row
	for _, line := range strings.Split(string(after), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cell := strings.TrimSpace(strings.Split(line, "|")[1])
		if cell == "path" || strings.Trim(cell, "-") == "" {
			continue // the header and its rule
		}
		r := row{cell: cell}
		var first []string
		for _, m := range quoted.FindAllStringSubmatch(cell, -1) {
			p := strings.TrimSuffix(m[1], "/")
			segs := strings.Split(p, "/")
			switch {
			case first == nil:
				first = segs
			case !atRoot(segs[0]) && len(segs) < len(first):
				p = path.Join(append(slices.Clone(first[:len(first)-len(segs)]), segs...)...)
			}
			r.paths = append(r.paths, p)
		}
		if len(r.paths) == 0 {
			t.Errorf("README.md's layout row %q names no path in backquotes\n\n%s", cell, layoutRule)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal(`README.md's "## Layout" section has no table`)
	}
	return rows
}

// The README's layout table is the map a new engineer reads first: it names every
// package `go list ./...` sees, and nothing that does not exist. The failure says which rows
// to add or fix.
func TestTheReadmeLayoutTableNamesEveryPackageAndNothingElse(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	atRoot := func(name string) bool {
		_, err := os.Stat(filepath.Join(root, name))
		return err == nil
	}
	named := map[string]bool{}
	var missing []string
	for _, r := range layoutRows(t, readme, atRoot) {
		for _, p := range r.paths {
			named[p] = true
			if !atRoot(p) {
				missing = append(missing, "  "+r.cell+"  names "+p)
			}
		}
	}
	var unnamed []string
	for p, doc := range packages(t, root) {
		if !named[p] {
			if doc == "" {
				doc = "(what it holds)"
			}
			unnamed = append(unnamed, "  | `"+p+"` | "+doc+" |")
		}
	}
	sort.Strings(unnamed)
	if len(missing) > 0 {
		t.Errorf("README.md's layout table names paths that do not exist; remove them or fix the row:\n%s\n\n%s",
			strings.Join(missing, "\n"), layoutRule)
	}
	if len(unnamed) > 0 {
		t.Errorf("README.md's layout table does not name these packages; add these rows (their package docs' first sentence; reword as the table does), or the name to the row of its family:\n%s\n\n%s",
			strings.Join(unnamed, "\n"), layoutRule)
	}
}
