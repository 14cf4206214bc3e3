package backend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// With no named token, the single admin token of older setups (SECKILL_ADMIN_TOKEN) is the
// admin's.
func TestLegacySingleAdminTokenStillWorks(t *testing.T) {
	s := New(Options{AdminToken: "legacy-secret-0123456789-abcdefghijklm"})
	h := s.Guard.Admin(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	req := httptest.NewRequest("POST", "/x", nil)
	req.Header.Set("Authorization", "Bearer legacy-secret-0123456789-abcdefghijklm")
	rec := httptest.NewRecorder()
	h(rec, req)
	if rec.Code != 204 {
		t.Fatalf("legacy token: %d", rec.Code)
	}
}

// A guessable admin token opens every control: the backend refuses to start with one, and says
// which token and why, without printing it.
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
