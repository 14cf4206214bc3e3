package throttle_test

// The tests of caddymodule/internal/placeholder, which reads the zones' keys (and the gate's,
// the token's and the room's values): they compare it with Caddy's own replacer, so they link
// Caddy, and live in the binary of a handler that links it anyway rather than in one of
// their own.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/internal/placeholder"
)

// request is a request with the replacer and variable table Caddy's server gives it.
func request(path string, headers map[string][]string) (*http.Request, func() (*http.Request, any)) {
	r := httptest.NewRequest(http.MethodPost, "http://x"+path, nil)
	for k, vs := range headers {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{}))
	repl := caddyhttp.NewTestReplacer(r)
	repl.Set("http.auth.user.id", "alice")
	repl.Set("http.vars.n", 42)
	return r, func() (*http.Request, any) { return r, repl }
}

// Every fast path reads what the replacer reads, for the templates the shipped Caddyfiles use
// and their edge cases (a missing or repeated header, a short path, an unset variable).
func TestAValueReadsWhatTheReplacerReads(t *testing.T) {
	templates := []string{
		"{http.request.header.X-User-ID}", "{http.request.header.x-device-id}", "{http.request.header.Missing}",
		"{http.request.uri.path.0}", "{http.request.uri.path.1}", "{http.request.uri.path.2}", "{http.request.uri.path.9}",
		"{http.auth.user.id}", "{http.vars.n}", "{http.auth.user.missing}",
		"literal", "u-{http.request.header.X-User-ID}", "{http.request.uri.path.x}", "",
	}
	paths := []string{"/seckill/s1/buy", "/", "//s1/buy", "/seckill", "/a/b/c/d/"}
	headers := []map[string][]string{
		{"X-User-ID": {"u1"}, "X-Device-Id": {"d1"}},
		{"X-User-ID": {"u1", "u2"}},
		{},
	}
	for _, p := range paths {
		for _, h := range headers {
			r, get := request(p, h)
			_, repl := get()
			for _, tpl := range templates {
				rp := repl.(interface{ ReplaceAll(string, string) string })
				want := rp.ReplaceAll(tpl, "")
				got := placeholder.Compile(tpl).Get(r, caddyhttpRepl(r))
				if got != want {
					t.Errorf("%q on %s %v: %q, the replacer says %q", tpl, p, h, got, want)
				}
			}
		}
	}
}

func TestAHeaderValueIsReadWithoutAllocating(t *testing.T) {
	r, _ := request("/seckill/s1/buy", map[string][]string{"X-User-ID": {"u1"}})
	user, sale := placeholder.Compile("{http.request.header.X-User-ID}"), placeholder.Compile("{http.request.uri.path.1}")
	repl := caddyhttpRepl(r)
	if n := testing.AllocsPerRun(100, func() {
		if user.Get(r, repl) != "u1" || sale.Get(r, repl) != "s1" {
			t.Fatal("wrong value")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per read, want 0", n)
	}
}

func caddyhttpRepl(r *http.Request) *caddy.Replacer {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	return repl
}
