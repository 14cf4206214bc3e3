package backend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
	s := &Service{Tokens: tk}
	var seen httpapi.Principal
	ok := func(w http.ResponseWriter, r *http.Request) {
		seen, _ = httpapi.PrincipalFrom(r.Context())
		w.WriteHeader(204)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/{id}", s.admin(ok))
	mux.HandleFunc("GET /view/{id}", s.viewer(ok))
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

func TestLegacySingleAdminTokenStillWorks(t *testing.T) {
	s := &Service{AdminToken: "legacy-secret-0123456789-abcdefghijklm"}
	h := s.admin(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	req := httptest.NewRequest("POST", "/x", nil)
	req.Header.Set("Authorization", "Bearer legacy-secret-0123456789-abcdefghijklm")
	rec := httptest.NewRecorder()
	h(rec, req)
	if rec.Code != 204 {
		t.Fatalf("legacy token: %d", rec.Code)
	}
}

// A guessable admin token opens every control: the backend refuses to start with one, and says
// which token and why, without printing it (issue 24, item 10).
func TestAWeakAdminTokenIsRefusedAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name          string
		cfg           Config
		secret, wants string
	}{
		{"a short single token", Config{AdminToken: "child-admin-token-0123"}, "child-admin-token-0123", "SECKILL_ADMIN_TOKEN"},
		{"the demo admin token, shouted", Config{AdminToken: " DEMO-ADMIN-TOKEN "}, "DEMO-ADMIN-TOKEN", "published"},
		{"all zeros", Config{AdminToken: strings.Repeat("0", 48)}, strings.Repeat("0", 48), "one character repeated"},
		{"a named token of few characters", Config{AdminTokens: "ops:" + strings.Repeat("ab12", 10) + ":admin"}, strings.Repeat("ab12", 10), `"ops"`},
	} {
		// No database behind this URL: a token that passed would make Run wait for Postgres
		// and end on the context, not on the token.
		tc.cfg.PGURL = "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
		err := Run(ctx, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: Run gave %v, want the token refused (%s)", tc.name, err, tc.wants)
		} else if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
}
