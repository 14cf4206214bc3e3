package lua

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// typedCalls are the typed calls the package declares: each XxxCall type with a Run method,
// mapped to whether that Run refers to the script value Xxx.
func typedCalls(t *testing.T) (calls map[string]bool, doc string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	calls = map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if name == "lua.go" && f.Doc != nil {
			doc = f.Doc.Text()
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Run" || fn.Body == nil {
				continue
			}
			recv := fn.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			id, ok := recv.(*ast.Ident)
			if !ok || !strings.HasSuffix(id.Name, "Call") {
				continue
			}
			script := strings.TrimSuffix(id.Name, "Call")
			runs := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if x, ok := n.(*ast.Ident); ok && x.Name == script {
					runs = true
				}
				return !runs
			})
			calls[id.Name] = runs
		}
	}
	if len(calls) == 0 || doc == "" {
		t.Fatalf("found %d typed calls and a package doc of %d bytes in lua/", len(calls), len(doc))
	}
	return calls, doc
}

// snake is the script file of a Go name: ShardTake -> shard_take.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	docCall     = regexp.MustCompile(`\b[A-Z][A-Za-z]*Call\b`)
	docUntyped  = regexp.MustCompile(`(?s)The\s+scripts\s+of\s+the\s+gateway's\s+own\s+stores\s+\(([^)]*)\)`)
	docTypedSet = regexp.MustCompile(`(?s)Keys,\s+Args\s+and\s+Run\s+\(([^)]*)\)`)
)

// lua.go's package doc lists the typed calls and the scripts still called with their ARGV in
// order (it listed 9 calls when 12 existed). The two lists cover every script once,
// each listed call exists and runs the script it is named after, and every call is listed.
func TestLuaGoListsEveryTypedCallAndEveryOtherScript(t *testing.T) {
	t.Parallel()
	calls, doc := typedCalls(t)
	m := docTypedSet.FindStringSubmatch(doc)
	if m == nil {
		t.Fatal(`lua.go's doc has no list of typed calls ("... with Keys, Args and Run (GateCall, ...)")`)
	}
	listed := docCall.FindAllString(m[1], -1)
	u := docUntyped.FindStringSubmatch(doc)
	if u == nil {
		t.Fatal(`lua.go's doc has no list of the other scripts ("The scripts of the gateway's own stores (...)")`)
	}
	var untyped []string
	for _, s := range strings.Split(u[1], ",") {
		if s = strings.TrimSpace(s); s != "" {
			untyped = append(untyped, s)
		}
	}

	var declared []string
	for c := range calls {
		declared = append(declared, c)
	}
	sort.Strings(declared)
	for _, c := range declared {
		if !slices.Contains(listed, c) {
			t.Errorf("lua.go's doc does not list the typed call %s: add it to the list after \"Keys, Args and Run\"", c)
		}
		if !calls[c] {
			t.Errorf("%s.Run does not run %s (%s.lua): a typed call runs the script it is named after", c, strings.TrimSuffix(c, "Call"), snake(strings.TrimSuffix(c, "Call")))
		}
	}
	for _, c := range listed {
		if _, ok := calls[c]; !ok {
			t.Errorf("lua.go's doc lists %s, which is not a type with a Run method in lua/: remove it", c)
		}
	}

	for _, pat := range untyped {
		if _, err := path.Match(pat, ""); err != nil {
			t.Errorf("lua.go's doc: %q is not a script name or pattern", pat)
		}
	}
	for _, name := range Names() {
		typed := slices.ContainsFunc(declared, func(c string) bool { return snake(strings.TrimSuffix(c, "Call")) == name })
		var matched []string
		for _, pat := range untyped {
			if ok, _ := path.Match(pat, name); ok {
				matched = append(matched, pat)
			}
		}
		switch {
		case typed && len(matched) > 0:
			t.Errorf("%s.lua has a typed call, yet lua.go's doc lists it (%s) among the scripts called with their ARGV in order", name, strings.Join(matched, ", "))
		case !typed && len(matched) == 0:
			t.Errorf("%s.lua has no typed call and lua.go's doc does not list it among the scripts called with their ARGV in order: add one or the other", name)
		}
	}
	for _, pat := range untyped {
		if !slices.ContainsFunc(Names(), func(n string) bool { ok, _ := path.Match(pat, n); return ok }) {
			t.Errorf("lua.go's doc lists %q among the scripts called with their ARGV in order, but no script in lua/ is named so: remove it", pat)
		}
	}
}
