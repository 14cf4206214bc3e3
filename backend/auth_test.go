package backend

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseTokensReadsNamedTokensAndTheSingleOne(t *testing.T) {
	tk, err := ParseTokens("alice:alice-secret-0123456789:admin, eve:eve-secret-0123456789:viewer,shop1:shop-secret-0123456789:shop,bob:bob-secret-0123456789", "legacy-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]Principal{
		"alice-secret-0123456789":  {"alice", RoleAdmin},
		"eve-secret-0123456789":    {"eve", RoleViewer},
		"shop-secret-0123456789":   {"shop1", RoleShop},
		"bob-secret-0123456789":    {"bob", RoleAdmin},
		"legacy-secret-0123456789": {"admin", RoleAdmin},
	}
	for secret, want := range cases {
		got, ok := tk.Lookup(secret)
		if !ok || got != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", secret, got, ok, want)
		}
	}
	for _, bad := range []string{"", "alice", "alice-secret-012345678", "alice-secret-01234567890"} {
		if p, ok := tk.Lookup(bad); ok {
			t.Errorf("Lookup(%q) accepted as %+v", bad, p)
		}
	}
}

func TestParseTokensRefusesWeakOrAmbiguousTokens(t *testing.T) {
	for _, tc := range []struct{ named, single, why string }{
		{"", "short-token", "single under 16"},
		{"a:short:admin", "", "named under 16"},
		{"a:0123456789abcdef:root", "", "unknown role"},
		{"a:0123456789abcdef:admin,a:fedcba9876543210:viewer", "", "name twice"},
		{"a:0123456789abcdef:admin,b:0123456789abcdef:viewer", "", "same secret twice"},
		{"a b:0123456789abcdef", "", "invalid name"},
		{"justatoken0123456789", "", "no name"},
		{"a:b:c:d", "", "too many parts"},
	} {
		if _, err := ParseTokens(tc.named, tc.single); err == nil {
			t.Errorf("%s: ParseTokens(%q, %q) accepted", tc.why, tc.named, tc.single)
		}
	}
	tk, err := ParseTokens("", "")
	if err != nil || !tk.Empty() {
		t.Fatalf("empty config: %v, empty=%v", err, tk.Empty())
	}
}

func TestAdminRoutesCheckRoleAndSchemeCaseInsensitively(t *testing.T) {
	tk, err := ParseTokens("root:root-secret-0123456789:admin,look:look-secret-0123456789:viewer,shop:shop-secret-0123456789:shop", "")
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Tokens: tk}
	var seen Principal
	ok := func(w http.ResponseWriter, r *http.Request) { seen, _ = PrincipalFrom(r.Context()); w.WriteHeader(204) }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/{id}", s.admin(ok))
	mux.HandleFunc("GET /view/{id}", s.viewer(ok))
	for _, tc := range []struct {
		method, path, auth string
		want               int
		who                string
	}{
		{"POST", "/control/s1", "Bearer root-secret-0123456789", 204, "root"},
		{"POST", "/control/s1", "bearer root-secret-0123456789", 204, "root"},
		{"POST", "/control/s1", "BEARER  root-secret-0123456789", 204, "root"},
		{"POST", "/control/s1", "Bearer look-secret-0123456789", 403, ""},
		{"POST", "/control/s1", "Bearer shop-secret-0123456789", 403, ""},
		{"POST", "/control/s1", "Basic root-secret-0123456789", 401, ""},
		{"POST", "/control/s1", "", 401, ""},
		{"POST", "/control/s1", "Bearer nope-nope-nope-nope", 401, ""},
		{"POST", "/control/bad.id", "Bearer root-secret-0123456789", 400, ""},
		{"GET", "/view/s1", "Bearer look-secret-0123456789", 204, "look"},
		{"GET", "/view/s1", "Bearer root-secret-0123456789", 204, "root"},
		{"GET", "/view/s1", "Bearer shop-secret-0123456789", 403, ""},
	} {
		seen = Principal{}
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tc.want || seen.Name != tc.who {
			t.Errorf("%s %s %q: %d as %q, want %d as %q (%s)", tc.method, tc.path, tc.auth, rec.Code, seen.Name, tc.want, tc.who, rec.Body)
		}
		if rec.Code >= 400 && !strings.Contains(rec.Header().Get("Content-Type"), "json") {
			t.Errorf("%s %s: refusal is not JSON", tc.method, tc.path)
		}
	}
}

func TestLegacySingleAdminTokenStillWorks(t *testing.T) {
	s := &Service{AdminToken: "legacy-secret-0123456789"}
	h := s.admin(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	req := httptest.NewRequest("POST", "/x", nil)
	req.Header.Set("Authorization", "Bearer legacy-secret-0123456789")
	rec := httptest.NewRecorder()
	h(rec, req)
	if rec.Code != 204 {
		t.Fatalf("legacy token: %d", rec.Code)
	}
}
