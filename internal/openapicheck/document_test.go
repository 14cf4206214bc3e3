package openapicheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, relative to this package.
const root = "../.."

func doc(t *testing.T) *Document {
	t.Helper()
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The document loads and validates as OpenAPI 3.1, and names its webhooks.
func TestTheDocumentIsValidOpenAPI31(t *testing.T) {
	d := doc(t)
	if d.T.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", d.T.OpenAPI)
	}
	for _, w := range []string{"order", "draw", "unit"} {
		if d.T.Webhooks[w] == nil || d.T.Webhooks[w].Post == nil {
			t.Errorf("webhook %q missing", w)
		}
	}
	// A broken document is refused: the load is a check, not a formality.
	if _, err := Parse([]byte("openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200': {$ref: '#/components/responses/Nope'}\n")); err == nil {
		t.Fatal("a document with a dangling $ref loaded")
	}
}

var (
	codeName = regexp.MustCompile(`^[Cc]ode[A-Z]`)
	// codeLiteral is a code written in place: httpapi.Refuse(w, status, "busy", ...) or a
	// controlError{status, "sale_ended", ...}.
	codeLiteral = regexp.MustCompile(`(?:Refuse\(w, |controlError\{)http\.Status\w+, "([a-z_]+)"`)
)

// codeConsts is every string constant named Code* or code* in the non-test Go files under
// dir, and every code literal given to a refusal there.
func codeConsts(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range codeLiteral.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = path + ": a literal"
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !codeName.MatchString(name.Name) || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = path + ": " + name.Name
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every refusal code the code declares (contract/'s, the backend's, the room's and the draw's
// code constants, and the codes the admin API writes in place) is in the document.
func TestEveryRefusalCodeIsInTheDocument(t *testing.T) {
	d := doc(t)
	have := d.Codes()
	declared := map[string]string{}
	for _, dir := range []string{"contract", "backend", "caddymodule"} {
		for c, where := range codeConsts(t, filepath.Join(root, dir)) {
			declared[c] = where
		}
	}
	if len(declared) < 30 {
		t.Fatalf("found only %d declared codes: the scan is broken", len(declared))
	}
	for c, where := range declared {
		if !have[c] {
			t.Errorf("code %q (%s) is not in docs/openapi.yaml", c, where)
		}
	}
}

var muxPattern = regexp.MustCompile(`mux\.Handle(?:Func)?\("([^"]+)"`)

// Every route the backend's muxes serve is in the document, with its method.
func TestEveryBackendRouteIsInTheDocument(t *testing.T) {
	d := doc(t)
	n := 0
	err := filepath.WalkDir(filepath.Join(root, "backend"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range muxPattern.FindAllStringSubmatch(string(src), -1) {
			n++
			method, p, ok := strings.Cut(m[1], " ")
			if !ok {
				method, p = http.MethodGet, m[1]
			}
			concrete := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "x1")
			if strings.HasSuffix(concrete, "/") {
				concrete += "sales" // a subtree: one path below it
			}
			if !d.Has(method, concrete) {
				t.Errorf("%s: %q is not in docs/openapi.yaml", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 25 {
		t.Fatalf("found only %d backend routes: the scan is broken", n)
	}
}

var gatewayPath = regexp.MustCompile(`(?:^|\s)(/seckill/\*/[a-z/]+|/orders/\*|/healthz)(?:\s|$)`)

// envDefault is a Caddyfile's {$VAR:default}: the shipped files name their URL space so
// (SECKILL_PREFIX...), and the document is written in the default one.
var envDefault = regexp.MustCompile(`\{\$[A-Z_]+:([^}]*)\}`)

// edgePaths are the paths under {prefix}/{sale}/ each handler of the edge's route answers (its
// Paths method, caddymodule/handler/dispatch.go): the shipped sites match them with the prefix
// alone, so the Caddyfiles name the handler, not the path.
var edgePaths = map[string][]string{
	"seckill_token": {"token"},
	"seckill_gate":  {"buy"},
	"seckill_draw":  {"draw", "draw/challenge", "challenge"},
	"seckill_room":  {"room", "room/prequeue", "challenge", "queue"},
}

// Every route of the shipped Caddyfiles' gateway sites (the room's, the draw's, token, buy,
// orders, the draw's reads proxied to the backend, health) is in the document.
func TestEveryGatewayRouteIsInTheDocument(t *testing.T) {
	d := doc(t)
	seen := map[string]bool{}
	for _, f := range []string{"Caddyfile", "deploy/Caddyfile.production", "deploy/Caddyfile.production-session"} {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if fs := strings.Fields(line); len(fs) > 0 {
				for _, rest := range edgePaths[fs[0]] {
					seen["/seckill/*/"+rest] = true
				}
			}
			for _, field := range strings.Fields(envDefault.ReplaceAllString(line, "$1")) {
				if m := gatewayPath.FindStringSubmatch(" " + field + " "); m != nil {
					seen[m[1]] = true
				}
			}
		}
	}
	var paths []string
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if len(paths) < 10 {
		t.Fatalf("found only %v: the scan is broken", paths)
	}
	for _, p := range paths {
		concrete := strings.ReplaceAll(p, "*", "s1")
		if !d.HasPath(concrete) {
			t.Errorf("the gateway serves %s; docs/openapi.yaml has no %s", p, concrete)
		}
	}
}

type recorder struct{ errs []string }

func (r *recorder) Helper()                        {}
func (r *recorder) Errorf(format string, a ...any) { r.errs = append(r.errs, format) }

// check runs one made-up exchange through Check.
func check(t *testing.T, method, path string, status int, header map[string]string, body string) error {
	t.Helper()
	req, _ := http.NewRequest(method, "http://127.0.0.1:1"+path, nil)
	req.Header.Set("X-User-ID", "u1")
	resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
	resp.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		resp.Header.Set(k, v)
	}
	return doc(t).Check(req, nil, resp, []byte(body))
}

// The checker refuses what the document does not say: an unknown route that was answered,
// a status the route does not list, a code its status does not list, a missing field, a
// missing Retry-After; and lets through what it does say.
func TestTheCheckerRefusesWhatTheDocumentDoesNotSay(t *testing.T) {
	ok := []struct {
		method, path string
		status       int
		header       map[string]string
		body         string
	}{
		{"POST", "/seckill/s1/buy", 202, nil, `{"order_id":"o1","status":"queued"}`},
		{"POST", "/seckill/s1/buy", 409, nil, `{"code":"sold_out","message":"m"}`},
		{"POST", "/seckill/s1/buy", 503, map[string]string{"Retry-After": "1"}, `{"code":"paused","message":"m"}`},
		{"GET", "/nowhere", 404, nil, `{"code":"not_found","message":"no such route"}`},
	}
	for _, c := range ok {
		if err := check(t, c.method, c.path, c.status, c.header, c.body); err != nil {
			t.Errorf("%s %s %d %s: %v", c.method, c.path, c.status, c.body, err)
		}
	}
	bad := []struct {
		why, method, path string
		status            int
		header            map[string]string
		body              string
	}{
		{"undocumented route answered", "GET", "/seckill/s1/nowhere", 200, nil, `{}`},
		{"undocumented status", "POST", "/seckill/s1/buy", 418, nil, `{"code":"bad_request","message":"m"}`},
		{"code not listed for the status", "POST", "/seckill/s1/buy", 409, nil, `{"code":"not_open","message":"m"}`},
		{"code nowhere in the document", "POST", "/seckill/s1/buy", 409, nil, `{"code":"surprise","message":"m"}`},
		{"missing field", "POST", "/seckill/s1/buy", 202, nil, `{"status":"queued"}`},
		{"unknown field", "POST", "/seckill/s1/buy", 202, nil, `{"order_id":"o1","status":"queued","extra":1}`},
		{"no Retry-After on 503", "POST", "/seckill/s1/buy", 503, nil, `{"code":"paused","message":"m"}`},
	}
	for _, c := range bad {
		if err := check(t, c.method, c.path, c.status, c.header, c.body); err == nil {
			t.Errorf("%s: passed", c.why)
		}
	}
	// A purchase served with no credential of the buyer's security schemes is a difference;
	// the session's cookie or bearer token is one.
	for cred, wantOK := range map[string]bool{"": false, "Cookie: session=s": true, "Authorization: Bearer s": true, "Authorization: Basic s": false} {
		req, _ := http.NewRequest("POST", "http://127.0.0.1:1/seckill/s1/buy", nil)
		if k, v, ok := strings.Cut(cred, ": "); ok {
			req.Header.Set(k, v)
		}
		body := `{"order_id":"o1","status":"queued"}`
		resp := &http.Response{StatusCode: 202, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}
		if err := doc(t).Check(req, nil, resp, []byte(body)); (err == nil) != wantOK {
			t.Errorf("a purchase served with credential %q: %v", cred, err)
		}
	}

	// Through a Transport: a difference is reported to the test.
	r := &recorder{}
	tr := &Transport{Doc: doc(t), Report: r, Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"unexpected":true}`))}, nil
	})}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:1/seckill/s1/token", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != `{"unexpected":true}` {
		t.Errorf("the caller got %q: the body was not put back", b)
	}
	if len(r.errs) != 1 {
		t.Errorf("a wrong answer through the Transport reported %d times, want once", len(r.errs))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
