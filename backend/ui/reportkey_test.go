package ui

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract/report"
)

// cockpitPage signs in to a cockpit whose report key is key and returns the live page.
func cockpitPage(t *testing.T, key *report.Key) string {
	t.Helper()
	c := New(Cockpit{Log: slog.New(slog.DiscardHandler), Now: time.Now,
		Lookup: func(token string) (httpapi.Principal, bool) {
			return httpapi.Principal{Name: "ops", Role: httpapi.RoleViewer}, token == "viewer-token"
		},
		Viewer:    func(next http.HandlerFunc) http.HandlerFunc { return next },
		ReportKey: func() *report.Key { return key }})
	mux := http.NewServeMux()
	c.Mount(mux, prometheus.NewRegistry())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(srv.URL+"/admin/ui/login", url.Values{"token": {"viewer-token"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %d %v", resp.StatusCode, resp.Cookies())
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/admin/ui", nil)
	req.AddCookie(resp.Cookies()[0])
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the live page: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// The live page shows the key that signs the fairness reports, its id and its public half as
// the key set publishes them (the operator hands them to whoever checks a report), says when
// it is the demo's key, and says when there is none (no report is published).
func TestTheCockpitShowsTheReportSigningKey(t *testing.T) {
	key := &report.Key{Kid: "0123456789abcdef", Alg: "Ed25519", PublicKey: "q6Tb8-_public-half-of-the-key_-9zXw", Demo: true}
	page := cockpitPage(t, key)
	for _, want := range []string{`<code id="report-kid">0123456789abcdef</code>`, `<code id="report-public-key">q6Tb8-_public-half-of-the-key_-9zXw</code>`,
		`id="report-key-demo"`, "/.well-known/seckill-report-keys"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "{{REPORT_KEY}}") || strings.Contains(page, `id="report-key-none"`) {
		t.Error("the page says there is no key, or left its placeholder")
	}
	key.Demo = false
	if page := cockpitPage(t, key); strings.Contains(page, `id="report-key-demo"`) {
		t.Error("a key of the operator's own is called the demo's")
	}
	if page := cockpitPage(t, nil); !strings.Contains(page, `id="report-key-none"`) || strings.Contains(page, `id="report-kid"`) {
		t.Error("without a key the page does not say that no report is published")
	}
}
