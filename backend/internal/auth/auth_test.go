package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
)

func TestParseTokensReadsNamedTokensAndTheSingleOne(t *testing.T) {
	tk, err := ParseTokens("alice:alice-secret-0123456789-abcdefghijklm:admin, eve:eve-secret-0123456789-abcdefghijklm:viewer,shop1:shop-secret-0123456789-abcdefghijklm:shop,bob:bob-secret-0123456789-abcdefghijklm", "legacy-secret-0123456789-abcdefghijklm")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]httpapi.Principal{
		"alice-secret-0123456789-abcdefghijklm":  {Name: "alice", Role: httpapi.RoleAdmin},
		"eve-secret-0123456789-abcdefghijklm":    {Name: "eve", Role: httpapi.RoleViewer},
		"shop-secret-0123456789-abcdefghijklm":   {Name: "shop1", Role: httpapi.RoleShop},
		"bob-secret-0123456789-abcdefghijklm":    {Name: "bob", Role: httpapi.RoleAdmin},
		"legacy-secret-0123456789-abcdefghijklm": {Name: "admin", Role: httpapi.RoleAdmin},
	}
	for secret, want := range cases {
		got, ok := tk.Lookup(secret)
		if !ok || got != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", secret, got, ok, want)
		}
	}
	for _, bad := range []string{"", "alice", "alice-secret-0123456789-abcdefghijkl", "alice-secret-0123456789-abcdefghijklmn"} {
		if p, ok := tk.Lookup(bad); ok {
			t.Errorf("Lookup(%q) accepted as %+v", bad, p)
		}
	}
}

func TestParseTokensRefusesWeakOrAmbiguousTokens(t *testing.T) {
	const a, b = "0123456789abcdef0123456789abcdef-a", "fedcba9876543210fedcba9876543210-b"
	for _, tc := range []struct{ named, single, why string }{
		{"", "short-token", "single too short"},
		{"a:short:admin", "", "named too short"},
		{"a:" + a + ":root", "", "unknown role"},
		{"a:" + a + ":admin,a:" + b + ":viewer", "", "name twice"},
		{"a:" + a + ":admin,b:" + a + ":viewer", "", "same secret twice"},
		{"a b:" + a, "", "invalid name"},
		{"justatoken0123456789justatoken0123456789", "", "no name"},
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
	tk, err := ParseTokens("root:root-secret-0123456789-abcdefghijklm:admin,look:look-secret-0123456789-abcdefghijklm:viewer,shop:shop-secret-0123456789-abcdefghijklm:shop", "")
	if err != nil {
		t.Fatal(err)
	}
	g := Guard{Tokens: tk}
	var seen httpapi.Principal
	ok := func(w http.ResponseWriter, r *http.Request) {
		seen, _ = httpapi.PrincipalFrom(r.Context())
		w.WriteHeader(204)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/{id}", g.Admin(ok))
	mux.HandleFunc("GET /view/{id}", g.Viewer(ok))
	for _, tc := range []struct {
		method, path, auth string
		want               int
		who                string
	}{
		{"POST", "/control/s1", "Bearer root-secret-0123456789-abcdefghijklm", 204, "root"},
		{"POST", "/control/s1", "bearer root-secret-0123456789-abcdefghijklm", 204, "root"},
		{"POST", "/control/s1", "BEARER  root-secret-0123456789-abcdefghijklm", 204, "root"},
		{"POST", "/control/s1", "Bearer look-secret-0123456789-abcdefghijklm", 403, ""},
		{"POST", "/control/s1", "Bearer shop-secret-0123456789-abcdefghijklm", 403, ""},
		{"POST", "/control/s1", "Basic root-secret-0123456789-abcdefghijklm", 401, ""},
		{"POST", "/control/s1", "", 401, ""},
		{"POST", "/control/s1", "Bearer nope-nope-nope-nope", 401, ""},
		{"POST", "/control/bad.id", "Bearer root-secret-0123456789-abcdefghijklm", 400, ""},
		{"GET", "/view/s1", "Bearer look-secret-0123456789-abcdefghijklm", 204, "look"},
		{"GET", "/view/s1", "Bearer root-secret-0123456789-abcdefghijklm", 204, "root"},
		{"GET", "/view/s1", "Bearer shop-secret-0123456789-abcdefghijklm", 403, ""},
	} {
		seen = httpapi.Principal{}
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
