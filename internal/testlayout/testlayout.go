// Package testlayout holds the rule that puts each test file in its tier, and the scanner that
// applies it: a _test.go file that reaches a server, a browser or a built binary (through the
// helpers listed in Needs) belongs to the integration tier and starts with
// `//go:build integration`; every other test file is pure and runs in make unit. Its test holds
// the module to the rule; `bash scripts/tag-tests.sh` adds the missing lines.
package testlayout

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Tag is the build tag of the integration tier (make test: go test -tags integration).
const Tag = "integration"

const mod = "github.com/seckilledge/seckill/"

// Needs maps an import path to the names of it whose use means a test reaches a server, a
// browser or a built binary; an empty list means any use of the package does.
var Needs = map[string][]string{
	mod + "internal/testenv": {"Redis", "RabbitVhost", "Mgmt", "RabbitMgmt", "Postgres", "PostgresFrom",
		"StartRedis", "StartRedisCluster", "StartPostgres", "StartRabbit", "NeedsServices", "Topology"},
	mod + "backend/internal/backendtest":          {"DB", "MigratedURL"},
	mod + "backend/internal/servicetest":          {"New", "NewOn"},
	mod + "internal/handlertest":                  {"StartGateway", "Binary", "RedisCluster"},
	mod + "internal/harness":                      {"Start", "Binaries", "Build"},
	mod + "bench/driver":                          {"Start"},
	mod + "bench/scenario/chaos":                  {"StartCluster", "Run"},
	mod + "caddymodule/internal/pagekit/pagetest": {"NewBrowser", "Chromium", "Context", "WidgetSweep", "ScreenshotBrowser"},
	mod + "internal/npmtools":                     {"Need"},
	"github.com/chromedp/chromedp":                nil,
}

// File is one test file as the rule sees it.
type File struct {
	Path   string   // from the module root
	Tagged bool     // its build constraint requires the integration tag
	Needs  []string // what it uses of Needs ("testenv.Redis"), sorted
	// Constraint is its //go:build expression ("" without one).
	Constraint string
}

// Scan parses every _test.go file under root (the module root; .run, bin, node_modules and
// hidden directories are not the module's) and says what each needs.
func Scan(root string) ([]File, error) {
	var files []File
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "node_modules" || n == "testdata" || n == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, inspect(filepath.ToSlash(rel), f))
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

func inspect(rel string, f *ast.File) File {
	out := File{Path: rel}
	// In the package of a helper itself (testenv's own tests), its names are used bare.
	own := Needs[mod+path.Dir(rel)]
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if constraint.IsGoBuild(c.Text) {
				if x, err := constraint.Parse(c.Text); err == nil {
					out.Constraint = x.String()
					out.Tagged = requires(x)
				}
			}
		}
	}
	names := map[string]string{} // local name -> import path, for the imports Needs lists
	need := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		list, ok := Needs[path]
		if !ok {
			continue
		}
		local := path[strings.LastIndexByte(path, '/')+1:]
		if len(list) == 0 {
			need[local] = true
			continue
		}
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(own) > 0 {
			if id, ok := call.Fun.(*ast.Ident); ok && slices.Contains(own, id.Name) {
				need[path.Base(path.Dir(rel))+"."+id.Name] = true
			}
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		path, ok := names[id.Name]
		if !ok {
			return true
		}
		for _, name := range Needs[path] {
			if sel.Sel.Name == name {
				need[id.Name+"."+name] = true
			}
		}
		return true
	})
	for k := range need {
		out.Needs = append(out.Needs, k)
	}
	sort.Strings(out.Needs)
	return out
}

// requires says whether x can hold only with the integration tag set: false under every
// setting of its other tags while integration is off.
func requires(x constraint.Expr) bool {
	var others []string
	var walk func(constraint.Expr)
	walk = func(e constraint.Expr) {
		switch e := e.(type) {
		case *constraint.AndExpr:
			walk(e.X)
			walk(e.Y)
		case *constraint.OrExpr:
			walk(e.X)
			walk(e.Y)
		case *constraint.NotExpr:
			walk(e.X)
		case *constraint.TagExpr:
			if e.Tag != Tag && !slices.Contains(others, e.Tag) {
				others = append(others, e.Tag)
			}
		}
	}
	walk(x)
	for set := 0; set < 1<<len(others); set++ {
		if x.Eval(func(tag string) bool {
			i := slices.Index(others, tag)
			return i >= 0 && set&(1<<i) != 0
		}) {
			return false
		}
	}
	return true
}

// Misplaced are the files that need the integration tier and lack its tag.
func Misplaced(files []File) []File {
	var out []File
	for _, f := range files {
		if len(f.Needs) > 0 && !f.Tagged {
			out = append(out, f)
		}
	}
	return out
}

// AddTag writes the integration build line at the top of the file at path (combined with the
// file's own constraint, if it has one).
func AddTag(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "package ") {
			break
		}
		if constraint.IsGoBuild(t) {
			x, err := constraint.Parse(t)
			if err != nil {
				return err
			}
			if requires(x) {
				return nil
			}
			lines[i] = "//go:build " + Tag + " && (" + x.String() + ")\n"
			return os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
		}
	}
	return os.WriteFile(path, append([]byte("//go:build "+Tag+"\n\n"), b...), 0o644)
}

// Watch makes go test's cache see what `go list` reads in the module at root, for a test that
// runs it: it opens every directory the go command reads Go files from (all but testdata and
// those whose names start with . or _; bin, dist and node_modules hold none) and reads the
// variables that change what go list answers. go test keys a test's result on the files and
// directories the test opened (a directory by the names, sizes and modification times of its
// entries) and the variables it read, so after Watch the test runs again when a Go file,
// go.mod or go.sum is changed, added or removed, and its result is taken from the cache
// otherwise.
func Watch(root string) error {
	for _, v := range []string{"GOFLAGS", "GOOS", "GOARCH", "GOEXPERIMENT", "CGO_ENABLED", "GOWORK", "GOTOOLCHAIN"} {
		os.Getenv(v)
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n := d.Name(); d.IsDir() && p != root &&
			(n == "testdata" || n == "bin" || n == "dist" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		return nil
	})
}
