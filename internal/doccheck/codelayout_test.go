package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// goFile is a Go file name written in backquotes: `endpoints.go`, `caddymodule/room/room.go`.
var goFile = regexp.MustCompile("`([a-z0-9_/]+\\.go)`")

// section is the text of a doc's section from its heading to the next heading of its level.
func section(t *testing.T, root, doc, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q", doc, heading)
	}
	rest := text[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// productFiles are the Go files of dir that are not tests, nor the package's doc file.
func productFiles(t *testing.T, root, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m {
		if base := filepath.Base(f); !strings.HasSuffix(base, "_test.go") && base != "doc.go" {
			out = append(out, base)
		}
	}
	sort.Strings(out)
	return out
}

// holdsLayout checks that the text names every product file of dirs (by its name) and that
// every Go file it names is one of them.
func holdsLayout(t *testing.T, root, text string, dirs ...string) {
	t.Helper()
	named := map[string]bool{}
	for _, m := range goFile.FindAllStringSubmatch(text, -1) {
		named[filepath.Base(m[1])] = true
	}
	have := map[string]bool{}
	for _, d := range dirs {
		for _, f := range productFiles(t, root, d) {
			have[f] = true
			if !named[f] {
				t.Errorf("%s/%s is not in the doc's layout", d, f)
			}
		}
	}
	for f := range named {
		if !have[f] {
			t.Errorf("the doc's layout names %s, which is in none of %v", f, dirs)
		}
	}
}

// methodsAndExports counts the methods declared on typ in dir's product files, and the names
// the package exports there.
func methodsAndExports(t *testing.T, root, dir, typ string) (methods []string, exports []string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, f := range productFiles(t, root, dir) {
		file, err := parser.ParseFile(fset, filepath.Join(root, dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					rt := d.Recv.List[0].Type
					if s, ok := rt.(*ast.StarExpr); ok {
						rt = s.X
					}
					if id, ok := rt.(*ast.Ident); ok && id.Name == typ {
						methods = append(methods, d.Name.Name)
					}
				} else if d.Name.IsExported() {
					exports = append(exports, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exports = append(exports, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								exports = append(exports, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return methods, exports
}

// docs/room.md's "The code" names every file of the room's packages, and the handler stays as
// small as it says: Room keeps Provision, the Caddyfile and the endpoint writers (at most 15
// methods), and the package exports at most 25 names (core's are written core.X).
func TestTheRoomLayoutIsTheDocumentedOne(t *testing.T) {
	root := moduleRoot(t)
	holdsLayout(t, root, section(t, root, "docs/room.md", "## The code"), "caddymodule/room", "caddymodule/room/core")
	methods, exports := methodsAndExports(t, root, "caddymodule/room", "Room")
	if len(methods) == 0 || len(methods) > 15 {
		t.Errorf("room.Room has %d methods, want 1 to 15: %v", len(methods), methods)
	}
	if len(exports) == 0 || len(exports) > 25 {
		t.Errorf("caddymodule/room exports %d names, want 1 to 25: %v", len(exports), exports)
	}
}

// docs/draw.md's edge section names every file of the draw's packages.
func TestTheDrawLayoutIsTheDocumentedOne(t *testing.T) {
	root := moduleRoot(t)
	holdsLayout(t, root, section(t, root, "docs/draw.md", "## Edge (`seckill_draw`, caddymodule/draw)"), "caddymodule/draw", "caddymodule/draw/core")
}
