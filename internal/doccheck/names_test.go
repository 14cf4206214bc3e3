package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// ---- names the code defines

var (
	// caseLit is a Caddyfile option the parsers accept: `case "front_window":`, `case "a", "b":`.
	caseLine = regexp.MustCompile(`(?m)^\s*case\s+("[^"]+"(?:\s*,\s*"[^"]+")*)\s*:`)
	strLit   = regexp.MustCompile(`"([^"]+)"`)
	// jsonTag is a config field's JSON name.
	jsonTag = regexp.MustCompile("json:\"([a-z0-9_]+)[,\"]")
	// metricLit is a collector's full name written out; subsystem and metricName the parts of
	// one declared through internal/metric (seckill_<subsystem>_<name>).
	metricLit  = regexp.MustCompile(`"(seckill_[a-z0-9_]+)"`)
	subsystem  = regexp.MustCompile(`Subsystem\("([a-z0-9_]+)"\)`)
	metricName = regexp.MustCompile(`\.(?:Counter|CounterVec|Gauge|GaugeVec|Histogram|HistogramVec)\(\s*"([a-z0-9_]+)"`)
)

// codeNames is what the product's Go code (tests left out) defines: the Caddyfile options its
// parsers accept and the JSON names of config fields (options), and its metrics' names.
type codeNames struct {
	options map[string]bool
	metrics map[string]bool
}

// namesOf reads Go sources (path -> text) for the names they define.
func namesOf(sources map[string]string) codeNames {
	n := codeNames{options: map[string]bool{}, metrics: map[string]bool{}}
	var subs, names []string
	for _, src := range sources {
		for _, m := range caseLine.FindAllStringSubmatch(src, -1) {
			for _, s := range strLit.FindAllStringSubmatch(m[1], -1) {
				n.options[s[1]] = true
			}
		}
		for _, m := range jsonTag.FindAllStringSubmatch(src, -1) {
			n.options[m[1]] = true
		}
		for _, m := range metricLit.FindAllStringSubmatch(src, -1) {
			n.metrics[m[1]] = true
		}
		for _, m := range subsystem.FindAllStringSubmatch(src, -1) {
			subs = append(subs, m[1])
		}
		for _, m := range metricName.FindAllStringSubmatch(src, -1) {
			names = append(names, m[1])
		}
	}
	for _, s := range subs {
		for _, name := range names {
			n.metrics["seckill_"+s+"_"+name] = true
		}
	}
	return n
}

// productNames reads every non-test Go file of the module.
func productNames(t *testing.T, root string) codeNames {
	t.Helper()
	sources := map[string]string{}
	walk(t, root, func(rel string) bool {
		return strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")
	}, func(rel, text string) { sources[rel] = text })
	return namesOf(sources)
}

// ---- names the docs use

var (
	// docMetric is a name of the form seckill_<subsystem>_<name>: two parts at least after
	// seckill_, so the directives (seckill_gate, seckill_room) are not taken for metrics.
	docMetric = regexp.MustCompile(`\bseckill_[a-z0-9]+_[a-z0-9_]*[a-z0-9]\b`)
	// firstQuoted is the first backquoted word of a table's first cell: `front_window <d>`.
	firstQuoted = regexp.MustCompile("^`([a-z][a-z0-9_.]*)")
	// caddyDirective opens a block of ours in a Caddyfile: seckill_room @room {, seckill {.
	caddyDirective = regexp.MustCompile(`^\s*seckill(_[a-z]+)?\b.*\{\s*$`)
)

// docMetrics is every metric name text uses (a histogram's _bucket, _sum and _count series
// count as the histogram's name when the name without them is one).
func docMetrics(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range docMetric.FindAllString(text, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// optionTables is the options text's option tables name: tables whose first header cell is
// "option", "field" or "Caddyfile", by the first backquoted word of each row's first cell
// (`relay.batch_size` names relay and batch_size). Rows that start with a capital letter are
// Go fields (redislock's options), not a Caddyfile's.
func optionTables(text string) []string {
	var out []string
	inTable, options := false, false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(line, "|")
		first := strings.TrimSpace(cells[1])
		if !inTable {
			inTable = true
			switch strings.ToLower(first) {
			case "option", "field", "caddyfile":
				options = true
			default:
				options = false
			}
			continue
		}
		if !options || strings.Trim(first, "-: ") == "" {
			continue
		}
		if m := firstQuoted.FindStringSubmatch(first); m != nil {
			out = append(out, strings.Split(m[1], ".")...)
		}
	}
	return out
}

// mapBlocks are blocks of ours whose lines are names the user picks, not options: the token
// keys by key id.
var mapBlocks = map[string]bool{"token_keys": true}

// caddyfileOptions is the options used inside our directives' blocks in the text's
// ```caddyfile examples: the first word of every line inside a seckill or seckill_* block, at
// any depth (a zone's options as well as the handler's), but a placeholder (<matchers>) or a
// line of a block of names (mapBlocks).
func caddyfileOptions(text string) []string {
	var out []string
	inBlock := false
	var stack []string // the blocks open inside one of our directives; empty: outside
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```caddyfile"):
			inBlock, stack = true, nil
			continue
		case inBlock && trimmed == "```":
			inBlock = false
			continue
		case !inBlock:
			continue
		}
		if i := strings.Index(trimmed, "#"); i >= 0 {
			trimmed = strings.TrimSpace(trimmed[:i])
		}
		if trimmed == "" {
			continue
		}
		word := strings.Fields(trimmed)[0]
		opens := strings.Count(trimmed, "{") - strings.Count(trimmed, "}")
		if len(stack) == 0 {
			if caddyDirective.MatchString(trimmed) {
				stack = append(stack, word)
			}
			continue
		}
		if word != "}" && !strings.HasPrefix(word, "@") && !strings.HasPrefix(word, "{") &&
			!strings.HasPrefix(word, "<") && !mapBlocks[stack[len(stack)-1]] {
			out = append(out, word)
		}
		switch {
		case opens > 0:
			stack = append(stack, word)
		case opens < 0 && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// unknownNames is what the doc text names that the code does not define: options of its
// option tables and Caddyfile examples, and metrics.
func unknownNames(text string, code codeNames) []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range append(optionTables(text), caddyfileOptions(text)...) {
		if !code.options[o] && !seen[o] {
			seen[o] = true
			out = append(out, "option "+o)
		}
	}
	for _, m := range docMetrics(text) {
		base := m
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suffix); ok && code.metrics[b] {
				base = b
			}
		}
		if !code.metrics[base] {
			out = append(out, "metric "+m)
		}
	}
	return out
}

func TestUnknownNamesFindsAnOptionOrAMetricTheCodeDoesNotDefine(t *testing.T) {
	code := namesOf(map[string]string{"room/caddyfile.go": `
		switch d.Val() {
		case "rate":
		case "front_window", "presence_window":
		case "token_keys":
		}
		type Room struct { Session caddy.Duration ` + "`json:\"session,omitempty\"`" + ` }
		var roomMetric = metric.Subsystem("room")
		var polls = roomMetric.Counter("polls_from_memory_total", "...")
		var lag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "seckill_backend_commit_seconds"})
	`})
	doc := "| Caddyfile | JSON | default |\n|---|---|---|\n| `rate <n>` | `rate` | 50 |\n| `front_window <d>` | | |\n" +
		"| `admit_every <d>` | | |\n\n" +
		"```caddyfile\n:8080 {\n\tseckill {\n\t\ttoken_keys {\n\t\t\tk1 {env.KEY}\n\t\t}\n\t}\n\tseckill_room <matchers> {\n\t\trate 10\n\t\tsession 5m\n\t\tpresense_window 7s # a typo\n\t}\n\treverse_proxy x {\n\t\tlb_policy first\n\t}\n}\n```\n" +
		"Watch seckill_room_polls_from_memory_total, seckill_backend_commit_seconds_bucket and seckill_room_polls_total; " +
		"seckill_room and seckill_gate are directives."
	got := unknownNames(doc, code)
	sort.Strings(got)
	want := []string{"metric seckill_room_polls_total", "option admit_every", "option presense_window"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("unknownNames = %q, want %q", got, want)
	}
}

// Every option a doc's option tables and Caddyfile examples use is one a parser accepts, and
// every metric a doc names is one the code registers: a renamed option or metric fails here
// until the docs follow.
func TestEveryOptionAndMetricADocNamesExists(t *testing.T) {
	root := moduleRoot(t)
	code := productNames(t, root)
	if len(code.options) < 50 || len(code.metrics) < 30 {
		t.Fatalf("read %d options and %d metrics from the code: the patterns no longer match how the code declares them",
			len(code.options), len(code.metrics))
	}
	var found []string
	walk(t, root, func(rel string) bool { return isDoc(rel) && !isHistory(rel) }, func(rel, text string) {
		for _, n := range unknownNames(text, code) {
			found = append(found, "  "+rel+": "+n)
		}
	})
	if len(found) > 0 {
		t.Errorf("docs name options or metrics the code does not define; fix the doc (or the name):\n%s", strings.Join(found, "\n"))
	}
}

// ---- dependencies

var (
	requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]+/[^\s]+)\s+v[^\s]+(\s*//\s*indirect)?\s*$`)
	modulePath  = regexp.MustCompile("`([a-z0-9.-]+\\.[a-z]+/[^`\\s]+)`")
)

// requires is go.mod's requirements: module path -> direct (not // indirect).
func requires(gomod string) map[string]bool {
	out := map[string]bool{}
	for _, m := range requireLine.FindAllStringSubmatch(gomod, -1) {
		out[m[1]] = m[2] == ""
	}
	return out
}

// dependencyRows is the Go modules of the README's "## Dependencies" table (npm rows left out).
func dependencyRows(readme string) []string {
	_, after, ok := strings.Cut(readme, "\n## Dependencies\n")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		first := strings.Split(line, "|")[1]
		if strings.HasPrefix(strings.TrimSpace(first), "npm:") {
			continue
		}
		for _, m := range modulePath.FindAllStringSubmatch(first, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// dependencyMismatch is the modules the table names that go.mod does not require, and the
// direct requirements of go.mod the table does not say the reason for.
func dependencyMismatch(readme, gomod string) (notRequired, unexplained []string) {
	req := requires(gomod)
	named := map[string]bool{}
	for _, m := range dependencyRows(readme) {
		named[m] = true
		if _, ok := req[m]; !ok {
			notRequired = append(notRequired, m)
		}
	}
	for m, direct := range req {
		if direct && !named[m] {
			unexplained = append(unexplained, m)
		}
	}
	sort.Strings(notRequired)
	sort.Strings(unexplained)
	return notRequired, unexplained
}

func TestDependencyMismatchFindsAModuleNotRequiredAndOneUnexplained(t *testing.T) {
	gomod := "module x\n\nrequire (\n\tgithub.com/redis/go-redis/v9 v9.23.0\n\tgithub.com/google/uuid v1.6.0\n\tgolang.org/x/sys v0.48.0 // indirect\n)\nrequire github.com/jackc/pgx/v5 v5.13.0\n"
	readme := "# x\n\n## Dependencies\n\n| module | why |\n|---|---|\n| `github.com/redis/go-redis/v9` | Redis |\n| `github.com/ulule/limiter/v3` | gone |\n" +
		"| `github.com/jackc/pgx/v5` | Postgres |\n| npm: `typescript` | tests |\n\n## Next\n| `github.com/google/uuid` | not in the table |\n"
	notRequired, unexplained := dependencyMismatch(readme, gomod)
	if strings.Join(notRequired, " ") != "github.com/ulule/limiter/v3" {
		t.Errorf("not required = %q, want the limiter go.mod does not require", notRequired)
	}
	if strings.Join(unexplained, " ") != "github.com/google/uuid" {
		t.Errorf("unexplained = %q, want uuid, direct in go.mod and outside the table", unexplained)
	}
}

// The README's dependency table is true to go.mod: every module it names is required, and
// every direct requirement has a row saying what it is for.
func TestTheReadmeDependencyTableMatchesGoMod(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dependencyRows(string(readme))) == 0 {
		t.Fatal(`README.md has no "## Dependencies" table of Go modules`)
	}
	notRequired, unexplained := dependencyMismatch(string(readme), string(gomod))
	if len(notRequired) > 0 {
		t.Errorf("README.md's dependency table names modules go.mod does not require; remove their rows:\n  %s",
			strings.Join(notRequired, "\n  "))
	}
	if len(unexplained) > 0 {
		t.Errorf("go.mod requires these modules directly and README.md's dependency table does not say what for; add a row each:\n  %s",
			strings.Join(unexplained, "\n  "))
	}
}

// ---- environment variables and make targets

var (
	envVar     = regexp.MustCompile(`\bSECKILL_[A-Z0-9_]*[A-Z0-9]\b`)
	makeTarget = regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
	targetLine = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
)

// unknownSettings is the SECKILL_* variables text names that no source reads or sets, and the
// make targets it names that the Makefile does not define.
func unknownSettings(text, sources, makefile string) []string {
	known := map[string]bool{}
	for _, v := range envVar.FindAllString(sources, -1) {
		known[v] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, v := range envVar.FindAllString(text, -1) {
		if !seen[v] && !known[v] {
			out = append(out, "variable "+v)
		}
		seen[v] = true
	}
	targets := map[string]bool{}
	for _, m := range targetLine.FindAllStringSubmatch(makefile, -1) {
		targets[m[1]] = true
	}
	for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
		if !targets[m[1]] && !seen["make "+m[1]] {
			out = append(out, "make "+m[1])
		}
		seen["make "+m[1]] = true
	}
	return out
}

func TestUnknownSettingsFindsAVariableAndATargetNobodyDefines(t *testing.T) {
	sources := `os.Getenv("SECKILL_PG_URL") // and SECKILL_REDIS_ADDR_X is another name`
	makefile := "run:\n\tscripts/run.sh\ntest: unit\n"
	doc := "Set SECKILL_PG_URL and SECKILL_REDIS_ADDR, then `make run`, `make test` and `make tests`."
	got := unknownSettings(doc, sources, makefile)
	want := []string{"variable SECKILL_REDIS_ADDR", "make tests"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("unknownSettings = %q, want %q", got, want)
	}
}

// Every SECKILL_* variable a doc names is one the product reads or sets (Go, the scripts, the
// Caddyfiles, the chart), and every `make` target a doc names is in the Makefile.
func TestEveryVariableAndMakeTargetADocNamesExists(t *testing.T) {
	root := moduleRoot(t)
	var sources strings.Builder
	walk(t, root, func(rel string) bool { return isProductSource(rel) || strings.HasSuffix(rel, ".tpl") },
		func(_ string, text string) { sources.WriteString(text); sources.WriteString("\n") })
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// The sources' variables, once: unknownSettings only needs their names.
	names := strings.Join(envVar.FindAllString(sources.String(), -1), " ")
	var found []string
	walk(t, root, func(rel string) bool { return isDoc(rel) && !isHistory(rel) }, func(rel, text string) {
		for _, n := range unknownSettings(text, names, string(makefile)) {
			found = append(found, "  "+rel+": "+n)
		}
	})
	if len(found) > 0 {
		t.Errorf("docs name variables no source reads or make targets the Makefile lacks; fix the doc:\n%s", strings.Join(found, "\n"))
	}
}

// ---- Go names

var (
	// docGoName is a backquoted exported name of a package: `contract.VerifyWebhook`,
	// `admin.RoomSpec` (a method's receiver type is written too: `sales.Sales.Preheat`).
	docGoName = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Z][A-Za-z0-9_]*)")
	// goDecl is a top-level or grouped declaration, or a method, of a Go file.
	goDecl = regexp.MustCompile(`(?m)^(?:func(?: \([^)]*\))?|type|var|const)\s+([A-Za-z_][A-Za-z0-9_]*)|^\t([A-Z][A-Za-z0-9_]*)\s*(?:=|[A-Za-z*\[(])`)
)

// packageClause is a Go file's package name.
var packageClause = regexp.MustCompile(`(?m)^package ([a-z][a-z0-9]*)`)

// declared maps each package name of sources (path -> text; the name of its package clause, an
// external test package's as its package's, commands left out) to the names its files declare.
func declared(sources map[string]string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, src := range sources {
		m := packageClause.FindStringSubmatch(src)
		if m == nil || m[1] == "main" {
			continue
		}
		pkg := strings.TrimSuffix(m[1], "_test")
		if out[pkg] == nil {
			out[pkg] = map[string]bool{}
		}
		for _, m := range goDecl.FindAllStringSubmatch(src, -1) {
			out[pkg][m[1]+m[2]] = true
		}
	}
	return out
}

// unknownGoNames is the `pkg.Name`s of text whose pkg is one of ours (by name) that declares no
// such Name. Names of other packages (http.Handler, jose.ES256) are not checked.
func unknownGoNames(text string, decls map[string]map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range docGoName.FindAllStringSubmatch(text, -1) {
		names, ours := decls[m[1]]
		if !ours || names[m[2]] || seen[m[0]] {
			continue
		}
		seen[m[0]] = true
		out = append(out, m[1]+"."+m[2])
	}
	return out
}

func TestUnknownGoNamesFindsANameThePackageDoesNotDeclare(t *testing.T) {
	decls := declared(map[string]string{
		"contract/admin/admin.go": "package admin\n\ntype RoomSpec struct{}\n\nconst (\n\tMaxVariants = 256\n)\n",
		"backend/backend.go":      "package backend\n\nfunc New() {}\n",
		"cmd/caddy/main.go":       "package main\n\nfunc Run() {}\n",
	})
	doc := "`admin.RoomSpec`, `admin.MaxVariants`, `backend.New`, `backend.RoomSpec`, `caddy.Duration` and `http.Handler`"
	got := unknownGoNames(doc, decls)
	if strings.Join(got, " ") != "backend.RoomSpec" {
		t.Errorf("unknownGoNames = %q, want [backend.RoomSpec]", got)
	}
}

// Every exported Go name a doc writes as `pkg.Name`, for a package of ours, is declared there:
// a renamed or moved function or type fails here until the docs follow.
func TestEveryGoNameADocNamesIsDeclared(t *testing.T) {
	root := moduleRoot(t)
	sources := map[string]string{}
	walk(t, root, func(rel string) bool { return strings.HasSuffix(rel, ".go") }, func(rel, text string) { sources[rel] = text })
	decls := declared(sources)
	var found []string
	walk(t, root, func(rel string) bool { return isDoc(rel) && !isHistory(rel) }, func(rel, text string) {
		for _, n := range unknownGoNames(text, decls) {
			found = append(found, "  "+rel+": "+n)
		}
	})
	if len(found) > 0 {
		t.Errorf("docs name Go declarations that do not exist in the package named; fix the doc:\n%s", strings.Join(found, "\n"))
	}
}
