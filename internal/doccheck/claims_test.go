package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The claims the docs make about the code, checked against the code: no issue number stands in
// for a reason, every option and metric a doc names exists, every file a doc names exists, and
// every Go module a doc names as a dependency is one go.mod requires. Each check is a plain
// function over text, so a test can show it fails on a bad input.

// skipDir is a directory no check reads: tools' and runs' output, and the stored history.
func skipDir(name string) bool {
	switch name {
	case ".git", "node_modules", ".run", "bin", "dist", "bench-results":
		return true
	}
	return false
}

// walk calls f with the path (from root, slash-separated) and contents of every file for which
// want is true.
func walk(t *testing.T, root string, want func(rel string) bool, f func(rel string, text string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if !want(rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f(rel, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isDoc is every Markdown file of the project but the changelog, which is history by design.
func isDoc(rel string) bool {
	return strings.HasSuffix(rel, ".md") && rel != "CHANGELOG.md"
}

// isHistory is a doc that records past measurements as they were taken (docs/bench-history.md):
// the files it names may have moved since. It still names no issue numbers.
func isHistory(rel string) bool {
	return rel == "docs/bench-history.md"
}

// isProductSource is a file whose comments and text describe the product: Go, Lua, SQL, shell,
// Makefiles, Caddyfiles, YAML (the chart, compose, alert rules) and the shipped JS client.
func isProductSource(rel string) bool {
	base := filepath.Base(rel)
	switch {
	case base == "Makefile", strings.HasPrefix(base, "Caddyfile"):
		return true
	case strings.HasSuffix(rel, ".json"), strings.HasSuffix(rel, ".md"):
		return false
	}
	switch filepath.Ext(rel) {
	case ".go", ".lua", ".sql", ".sh", ".yaml", ".yml", ".js", ".ts", ".html", ".tmpl", ".caddyfile":
		return true
	}
	return false
}

// issueRef is a reference to a tracker's issue by number: the word issue or issues, either
// case, and a number (testdata/issue_refs_bad.txt has examples). In Markdown a bare "#" and a
// number is one too (not "PKCS #8", a standard's part).
var (
	issueWord = regexp.MustCompile(`(?i)\bissues? #?[0-9]+\b`)
	issueHash = regexp.MustCompile(`(^|[\s(\[])#[0-9]+\b`)
	pkcs      = regexp.MustCompile(`PKCS #[0-9]+`)
)

// issueRefs returns each line of text (1-based number and text) that refers to an issue by
// its number. markdown also counts "#N".
func issueRefs(text string, markdown bool) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		l := pkcs.ReplaceAllString(line, "")
		if issueWord.MatchString(l) || (markdown && issueHash.MatchString(l)) {
			out = append(out, lineRef(i, line))
		}
	}
	return out
}

func lineRef(i int, line string) string {
	line = strings.TrimSpace(line)
	if len(line) > 140 {
		line = line[:140] + "..."
	}
	return strconv.Itoa(i+1) + ": " + line
}

func TestIssueRefsFindsNumbersAndNothingElse(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "issue_refs_bad.txt"))
	if err != nil {
		t.Fatal(err)
	}
	bad := string(b)
	if got := issueRefs(bad, true); len(got) != 4 {
		t.Errorf("issueRefs found %d references in %q, want 4: %q", len(got), bad, got)
	}
	if got := issueRefs("fixed in #12", false); len(got) != 0 {
		t.Errorf("outside Markdown #12 is not a reference (CSS colours, titles): %q", got)
	}
	good := "the issue step bounds open challenges\ncolor:#222\nPKCS #8 or SEC 1\n`#1 in line`\nthe issuer's key"
	if got := issueRefs(good, true); len(got) != 0 {
		t.Errorf("issueRefs found references in text that has none: %q", got)
	}
}

// Docs and product comments say what the code does and why; the history of a rule is in git
// and CHANGELOG.md. An issue number is not a reason a reader can follow.
func TestNoIssueNumbersInDocsOrProductSources(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	// This package's own tests hold examples of what the check refuses.
	want := func(rel string) bool {
		return (isDoc(rel) || isProductSource(rel)) && !strings.HasPrefix(rel, "internal/doccheck/")
	}
	walk(t, root, want, func(rel, text string) {
		for _, r := range issueRefs(text, strings.HasSuffix(rel, ".md")) {
			found = append(found, "  "+rel+":"+r)
		}
	})
	if len(found) > 0 {
		t.Errorf("these lines refer to issues by number; say what the code does and why instead (history goes in CHANGELOG.md):\n%s",
			strings.Join(found, "\n"))
	}
}

// ---- file paths

// pathRoots are the module root's directories a doc names files under.
var pathRoots = []string{"backend", "bench", "caddymodule", "clients", "cmd", "contract", "deploy",
	"docs", "examples", "internal", "lua", "redislock", "scripts"}

var (
	// namedPath is a path a doc names: under one of pathRoots, of file-name characters, in
	// backquotes or in prose (then it must end in a file extension, so prose like
	// "backend/orders" for a package is read too when quoted only).
	quotedPath = regexp.MustCompile("`((?:" + strings.Join(pathRoots, "|") + `)/[A-Za-z0-9_./-]*)` + "`")
	prosePath  = regexp.MustCompile(`(?:^|[\s(,"])((?:` + strings.Join(pathRoots, "|") + `)/[A-Za-z0-9_./-]*\.(?:md|go|sh|lua|sql|yaml|yml|json|js|ts|html|pem|txt|tmpl))\b`)
	// goIdent is a Go identifier after a package path: contract/draw.Build, internal/version.Version.
	goIdent = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_.]*$`)
	// mdLink is a Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// namedPaths returns the paths text names: quoted or prose paths from the module root, and
// link targets relative to dir (the doc's directory). Globs, placeholders and URLs are left
// out: they name no one file.
func namedPaths(text, dir string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		p = strings.TrimRight(p, ".,:;")
		p = strings.TrimSuffix(p, "/")
		if p == "" || strings.ContainsAny(p, "*<>{}$") || strings.Contains(p, "...") || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	for _, m := range quotedPath.FindAllStringSubmatch(text, -1) {
		add(m[1])
	}
	for _, m := range prosePath.FindAllStringSubmatch(text, -1) {
		add(m[1])
	}
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		add(filepath.ToSlash(filepath.Join(dir, target)))
	}
	return out
}

// missingPaths is the paths of namedPaths(text, dir) for which exists is false.
func missingPaths(text, dir string, exists func(string) bool) []string {
	var out []string
	for _, p := range namedPaths(text, dir) {
		// contract/draw.Build names the package contract/draw (bench/fairness.Caddyfile a file).
		if m := goIdent.FindStringIndex(p); m != nil && !exists(p) && exists(p[:m[0]]) {
			continue
		}
		if !exists(p) {
			out = append(out, p)
		}
	}
	return out
}

func TestMissingPathsFindsAFileThatIsNotThere(t *testing.T) {
	files := map[string]bool{"docs/room.md": true, "lua/gate.lua": true, "caddymodule/room": true}
	exists := func(p string) bool { return files[p] }
	text := "see `lua/gate.lua`, docs/room.md and [the room](room.md#admission); " +
		"`lua/relay.lua` and scripts/gone.sh are gone, as is [this](../caddymodule/token/x.go); " +
		"`caddymodule/*/core` is a glob, `lua/<name>.lua` a placeholder, `caddymodule/room.Room` an identifier"
	got := missingPaths(text, "docs", exists)
	sort.Strings(got)
	want := []string{"caddymodule/token/x.go", "lua/relay.lua", "scripts/gone.sh"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("missingPaths = %q, want %q", got, want)
	}
}

// Every file a doc names exists: a reader who follows a path finds what the doc describes.
func TestEveryFileADocNamesExists(t *testing.T) {
	root := moduleRoot(t)
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil
	}
	var found []string
	walk(t, root, func(rel string) bool { return isDoc(rel) && !isHistory(rel) }, func(rel, text string) {
		for _, p := range missingPaths(text, filepath.ToSlash(filepath.Dir(rel)), exists) {
			found = append(found, "  "+rel+" names "+p)
		}
	})
	if len(found) > 0 {
		t.Errorf("docs name files that do not exist; fix the path or the sentence:\n%s", strings.Join(found, "\n"))
	}
}
