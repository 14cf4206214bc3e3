// Package openapicheck holds docs/openapi.yaml to what the real gateway and backend do. A
// Transport (an http.RoundTripper) validates every request a test sends and every answer it
// receives against the document, with github.com/getkin/kin-openapi, and reports each
// difference: a route the document lacks, a status it does not list for the route, a refusal
// code it does not list for that status (the response's examples, one per code: the schema
// keeps the set open for clients), a body or a header that does not match its schema, a
// request the document calls invalid that the server nevertheless accepted (a request with no
// credential of the operation's security schemes among them).
//
// Its tests also hold the document to what generators and linters read: Redocly's
// recommended rules (redocly.yaml), a description on every property, an example on every
// request and answer, component names unique as type names, and TypeScript types generated
// by openapi-typescript that type-check under tsc --strict.
//
// The whole-system tests (internal/systemtest) send their requests through it, so the
// document is checked against real answers and not only written.
package openapicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Document is the loaded and validated OpenAPI document with a router over its paths.
type Document struct {
	T      *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]map[string]bool // operationId -> "status code" -> seen
}

// The pages the document lists (the report's, with Accept: text/html) are checked as text, as
// kin-openapi checks text/plain: their schema is a string.
func init() { openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder) }

// DefaultPath is docs/openapi.yaml of the repository this package is built from.
func DefaultPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml")
}

var (
	loadOnce sync.Once
	loaded   *Document
	loadErr  error
)

// Default loads DefaultPath once per process (the tests of a package share it, and with it
// the record of what they exercised).
func Default() (*Document, error) {
	loadOnce.Do(func() { loaded, loadErr = Load(DefaultPath()) })
	return loaded, loadErr
}

// Load reads the document at path and validates it (OpenAPI 3.1; every $ref resolved, every
// schema well formed, every example valid).
func Load(path string) (*Document, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(src)
}

// Parse is Load of a document in memory.
func Parse(src []byte) (*Document, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(src)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if !t.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapi: the document is %s, want 3.1", t.OpenAPI)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	// Route by path alone: the document names three listeners (gateway, order listener,
	// admin listener) and the tests run them on ports of their own. A copy keeps the
	// document's servers as written.
	routing := *t
	routing.Servers = openapi3.Servers{{URL: "/"}}
	r, err := gorillamux.NewRouter(&routing)
	if err != nil {
		return nil, fmt.Errorf("openapi: router: %w", err)
	}
	return &Document{T: t, router: r, seen: map[string]map[string]bool{}}, nil
}

// Reporter is what a Transport tells of a difference: a *testing.T's Errorf.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// Transport validates each request and its answer against Doc and reports every difference
// to Report. It never changes what the caller sends or receives: bodies are read and put back.
type Transport struct {
	Doc    *Document
	Report Reporter
	// Base sends the request (nil: http.DefaultTransport).
	Base http.RoundTripper
}

// Client is an http.Client whose requests go through a Transport over http.DefaultTransport.
func Client(doc *Document, report Reporter) *http.Client {
	return &http.Client{Transport: &Transport{Doc: doc, Report: report}}
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// RoundTrip sends req and checks the exchange.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := t.base().RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the caller sees the short body; nothing to check
	}
	if problem := t.Doc.Check(req, reqBody, resp, respBody); problem != nil {
		t.Report.Helper()
		t.Report.Errorf("openapi: %s %s -> %d: %v\nrequest body: %s\nanswer body: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, problem, excerpt(reqBody), excerpt(respBody))
	}
	return resp, nil
}

// Check validates one exchange: nil when the document describes it.
func (d *Document) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	probe := req.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := d.router.FindRoute(probe)
	if errors.Is(err, routers.ErrMethodNotAllowed) && resp.StatusCode == http.StatusMethodNotAllowed {
		// A method the path does not take: the answer is the path's documented 405.
		route, params, err = d.otherMethod(probe)
	}
	if err != nil {
		// No such route in the document: fine only if the server has none either.
		if refusedAsUnknown(resp.StatusCode, respBody) {
			return nil
		}
		return fmt.Errorf("the document has no %s %s, but the server answered it: %w", req.Method, req.URL.Path, err)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    credentialPresent,
		IncludeResponseStatus: true,
	}
	// The reason and where, not kin-openapi's dump of the whole schema and value.
	opts.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		if p := err.JSONPointer(); len(p) > 0 {
			return "/" + strings.Join(p, "/") + ": " + err.Reason
		}
		return err.Reason
	})
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && resp.StatusCode < 400 {
		return fmt.Errorf("the server accepted a request the document calls invalid: %w", reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("the answer differs from the document: %w", err)
	}
	if err := refusalListed(route, resp.StatusCode, respBody); err != nil {
		return err
	}
	d.record(route, resp.StatusCode, respBody)
	return nil
}

// credentialPresent is the security check of a request: it holds when the request carries
// the scheme's credential (a bearer token, the API key's header or cookie). Whether the
// credential is good is the server's to say; what the checker holds the document to is that
// an operation the server served (a status under 400) names a scheme the request used, or is
// public.
func credentialPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	req, s := in.RequestValidationInput.Request, in.SecurityScheme
	switch {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		scheme, cred, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "Bearer") && cred != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "header":
		if req.Header.Get(s.Name) != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "cookie":
		if c, err := req.Cookie(s.Name); err == nil && c.Value != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "query":
		if req.URL.Query().Get(s.Name) != "" {
			return nil
		}
	}
	return fmt.Errorf("no %s credential (%s %s)", in.SecuritySchemeName, s.Type, s.Name)
}

// refusalListed checks a refusal's code against the codes its response lists. The document
// keeps the set of codes open for clients (the Refusal schema's code is any string), so the
// schema lets any code through; what the server may send for a status is the codes of that
// response's examples, one example per code, and a code outside them is a difference.
func refusalListed(route *routers.Route, status int, body []byte) error {
	var r struct {
		Code string `json:"code"`
	}
	if status < 400 || json.Unmarshal(body, &r) != nil || r.Code == "" || route.Operation == nil {
		return nil
	}
	ref := route.Operation.Responses.Status(status)
	if ref == nil {
		ref = route.Operation.Responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return nil // ValidateResponse refused an undocumented status already
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil {
		return nil
	}
	listed := ExampleCodes(mt)
	if len(listed) == 0 && mt.Schema != nil && mt.Schema.Value != nil && len(mt.Schema.Value.Properties) == 0 {
		return nil // an answer of any shape (the live page's proxy of the admin API)
	}
	if !listed[r.Code] {
		return fmt.Errorf("the answer's code %q is not one the document lists for %d (its examples: %s)", r.Code, status, strings.Join(sortedKeys(listed), ", "))
	}
	return nil
}

// ExampleCodes is the set of refusal codes a media type's examples carry.
func ExampleCodes(mt *openapi3.MediaType) map[string]bool {
	out := map[string]bool{}
	for _, ex := range mt.Examples {
		if ex == nil || ex.Value == nil {
			continue
		}
		if v, ok := ex.Value.Value.(map[string]any); ok {
			if c, ok := v["code"].(string); ok {
				out[c] = true
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// otherMethod routes req's path under the first method the document has for it, so that a
// 405 is checked against the path's own documented 405 answer.
func (d *Document) otherMethod(req *http.Request) (*routers.Route, map[string]string, error) {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodPut} {
		probe := req.Clone(context.Background())
		probe.Method = m
		if route, params, err := d.router.FindRoute(probe); err == nil {
			route.Method = req.Method
			return route, params, nil
		}
	}
	return nil, nil, routers.ErrPathNotFound
}

// refusedAsUnknown reports whether an answer is the server saying it has no such route (or
// not under this method): 404 not_found, 405 method_not_allowed, or 400 bad_request for a path
// it refuses to route at all (one not in canonical form: /orders/a/../b).
func refusedAsUnknown(status int, body []byte) bool {
	var r struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &r)
	return status == http.StatusNotFound && r.Code == "not_found" ||
		status == http.StatusBadRequest && r.Code == "bad_request" ||
		status == http.StatusMethodNotAllowed && r.Code == "method_not_allowed"
}

func (d *Document) record(route *routers.Route, status int, body []byte) {
	id := route.Method + " " + route.Path
	if route.Operation != nil && route.Operation.OperationID != "" {
		id = route.Operation.OperationID
	}
	var r struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &r)
	key := fmt.Sprint(status)
	if r.Code != "" {
		key += " " + r.Code
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[id] == nil {
		d.seen[id] = map[string]bool{}
	}
	d.seen[id][key] = true
}

// Seen lists the exchanges checked so far, by operationId: each "status" or "status code".
func (d *Document) Seen() map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string][]string{}
	for id, keys := range d.seen {
		for k := range keys {
			out[id] = append(out[id], k)
		}
		sort.Strings(out[id])
	}
	return out
}

// Operation is one operation of the document.
type Operation struct {
	ID, Method, Path string
	Tags             []string
}

// Operations lists the document's operations (paths only, not webhooks), sorted by path.
func (d *Document) Operations() []Operation {
	var out []Operation
	for _, path := range d.T.Paths.InMatchingOrder() {
		for method, op := range d.T.Paths.Value(path).Operations() {
			out = append(out, Operation{ID: op.OperationID, Method: method, Path: path, Tags: op.Tags})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// Has reports whether the document routes method and path (a concrete path such as
// /seckill/s1/buy, or a ServeMux pattern's with its wildcards filled in).
func (d *Document) Has(method, path string) bool {
	req := &http.Request{Method: method, URL: &url.URL{Path: path}, Header: http.Header{}, Host: "localhost"}
	_, _, err := d.router.FindRoute(req)
	return err == nil
}

// Codes lists every refusal code the document names anywhere (the Refusal schema's
// x-extensible-enum and every response's examples).
func (d *Document) Codes() map[string]bool {
	codes := map[string]bool{}
	raw, _ := json.Marshal(d.T)
	var walk func(v any, underCode bool)
	walk = func(v any, underCode bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if underCode && (k == "enum" || k == "x-extensible-enum") {
					for _, e := range c.([]any) {
						if s, ok := e.(string); ok {
							codes[s] = true
						}
					}
				}
				walk(c, k == "code")
			}
		case []any:
			for _, c := range x {
				walk(c, false)
			}
		}
	}
	var tree any
	_ = json.Unmarshal(raw, &tree)
	walk(tree, false)
	if d.T.Components != nil {
		for _, ex := range d.T.Components.Examples {
			if ex != nil && ex.Value != nil {
				if v, ok := ex.Value.Value.(map[string]any); ok {
					if c, ok := v["code"].(string); ok {
						codes[c] = true
					}
				}
			}
		}
	}
	return codes
}

func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	if s == "" {
		return "(none)"
	}
	return s
}

// HasPath reports whether the document routes path under any method.
func (d *Document) HasPath(path string) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if d.Has(m, path) {
			return true
		}
	}
	return false
}
