package ui_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/backend/ui"
	"github.com/seckilledge/seckill/contract"
)

// The cockpit's sign-in, tested on the admin handler alone: signing in,
// sessions and the guards around them touch neither Postgres nor Redis.

// syncBuffer is a log sink the handlers may write to from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cockpitService is a Service with alice (admin) and vera (viewer), a settable clock and a
// captured log, and its admin handler.
func cockpitService(t *testing.T) (*backend.Service, http.Handler, *syncBuffer, *time.Time) {
	t.Helper()
	toks, err := backend.ParseTokens("alice:"+servicetest.AliceToken+":admin,vera:"+servicetest.ViewerToken+":viewer", "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := backend.New(backend.Options{Tokens: toks, Log: slog.New(slog.NewJSONHandler(logs, nil)), Now: func() time.Time { return clock }})
	return s, s.Handler(backend.NewMetricsRegistry(), false), logs, &clock
}

// serve runs one request through h from the client address remote.
func serve(h http.Handler, method, target, remote string, form url.Values, hdr map[string]string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1:8082"
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if remote != "" {
		req.RemoteAddr = remote
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func signInRec(t *testing.T, h http.Handler, token string) *http.Cookie {
	t.Helper()
	rec := serve(h, "POST", "/admin/ui/login", "192.0.2.1:4000", url.Values{"token": {token}}, nil)
	cs := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cs) != 1 {
		t.Fatalf("sign-in: %d %v %s", rec.Code, cs, rec.Body)
	}
	return cs[0]
}

func refusalCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var ref contract.Refusal
	if err := json.Unmarshal(rec.Body.Bytes(), &ref); err != nil {
		t.Fatalf("refusal %d is not JSON: %q", rec.Code, rec.Body)
	}
	return ref.Code
}

func TestTheCockpitCookieIsASessionNotTheToken(t *testing.T) {
	_, h, _, _ := cockpitService(t)
	c := signInRec(t, h, servicetest.AliceToken)
	if strings.Contains(c.Value, servicetest.AliceToken) || strings.Contains(servicetest.AliceToken, c.Value) {
		t.Fatalf("the cookie %q carries the token", c.Value)
	}
	if raw, err := base64.RawURLEncoding.DecodeString(c.Value); err != nil || len(raw) != 32 {
		t.Fatalf("the cookie %q: want 32 random bytes, base64url (%v)", c.Value, err)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/admin/ui" || c.MaxAge != 12*3600 || c.Secure {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/admin/ui, Max-Age 12 h, not Secure on plain HTTP", c)
	}
	if rec := serve(h, "GET", "/admin/ui", "", nil, nil, c); rec.Code != 200 || !strings.Contains(rec.Body.String(), ">alice<") {
		t.Fatalf("the page with the session: %d", rec.Code)
	}
	// Two sign-ins are two sessions; signing in again from the same browser ends its old one.
	if c2 := signInRec(t, h, servicetest.AliceToken); c2.Value == c.Value {
		t.Fatal("two sign-ins got the same session id")
	}
	rec := serve(h, "POST", "/admin/ui/login", "", url.Values{"token": {servicetest.ViewerToken}}, nil, c)
	if rec.Code != http.StatusSeeOther || serve(h, "GET", "/admin/ui", "", nil, nil, c).Code != 401 {
		t.Fatalf("signing in again (%d) left the old session alive", rec.Code)
	}
	// The token itself in the cookie (what the page used to keep) opens nothing.
	if rec := serve(h, "GET", "/admin/ui", "", nil, nil, &http.Cookie{Name: ui.CookieName, Value: servicetest.AliceToken}); rec.Code != 401 {
		t.Fatalf("a cookie holding the raw token: %d, want 401", rec.Code)
	}
	// No sign-in by URL: ?token= is ignored, no cookie is set.
	rec = serve(h, "GET", "/admin/ui?token="+servicetest.AliceToken, "", nil, nil)
	if rec.Code != 401 || len(rec.Result().Cookies()) != 0 || !strings.Contains(rec.Body.String(), `name="token"`) {
		t.Fatalf("?token=: %d %v, want the login form and no cookie", rec.Code, rec.Result().Cookies())
	}
	// Behind TLS the cookie is Secure.
	s, _, _, _ := cockpitService(t)
	srv := httptest.NewTLSServer(s.Handler(backend.NewMetricsRegistry(), false))
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.PostForm(srv.URL+"/admin/ui/login", url.Values{"token": {servicetest.AliceToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cs := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure {
		t.Fatalf("sign-in over TLS: %d %+v, want a Secure cookie", resp.StatusCode, cs)
	}
}

func TestSigningOutEndsTheSessionOnTheServer(t *testing.T) {
	s, h, _, _ := cockpitService(t)
	c := signInRec(t, h, servicetest.AliceToken)
	rec := serve(h, "POST", "/admin/ui/logout", "", nil, map[string]string{"Sec-Fetch-Site": "same-origin"}, c)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", rec.Code)
	}
	if cs := rec.Result().Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Fatalf("sign-out cookies %+v: want the cookie deleted", cs)
	}
	// The old cookie, kept by whoever copied it, no longer opens the page, the stream or the API.
	if rec := serve(h, "GET", "/admin/ui", "", nil, nil, c); rec.Code != 401 {
		t.Fatalf("the page after sign-out: %d", rec.Code)
	}
	if rec := serve(h, "GET", "/admin/ui/events", "", nil, nil, c); rec.Code != 401 {
		t.Fatalf("the stream after sign-out: %d", rec.Code)
	}
	if n := s.Cockpit.Sessions(); n != 0 {
		t.Fatalf("%d sessions left after sign-out", n)
	}
}

func TestACockpitSessionEndsAfterTwelveHoursIdleAndADayAtMost(t *testing.T) {
	_, h, _, clock := cockpitService(t)
	c := signInRec(t, h, servicetest.ViewerToken)
	for i := 0; i < 2; i++ { // 11 h, then 22 h after sign-in: each visit keeps it alive
		*clock = clock.Add(11 * time.Hour)
		if rec := serve(h, "GET", "/admin/ui", "", nil, nil, c); rec.Code != 200 {
			t.Fatalf("visit %d, 11 h after the last: %d", i+1, rec.Code)
		}
	}
	*clock = clock.Add(2 * time.Hour) // 24 h after sign-in, 2 h after the last visit
	if rec := serve(h, "GET", "/admin/ui", "", nil, nil, c); rec.Code != 401 {
		t.Fatalf("a day after sign-in: %d, want 401", rec.Code)
	}
	c = signInRec(t, h, servicetest.ViewerToken)
	*clock = clock.Add(12 * time.Hour)
	if rec := serve(h, "GET", "/admin/ui", "", nil, nil, c); rec.Code != 401 {
		t.Fatalf("12 h idle: %d, want 401", rec.Code)
	}
}

func TestACrossSiteLoginIsRefused(t *testing.T) {
	s, h, _, _ := cockpitService(t)
	form := url.Values{"token": {servicetest.AliceToken}}
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Sec-Fetch-Site": "cross-site", "Origin": "http://127.0.0.1:8082"},
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
		{"Origin": "http://127.0.0.1:8082.evil.example"},
	} {
		rec := serve(h, "POST", "/admin/ui/login", "", form, hdr)
		if rec.Code != 403 || refusalCode(t, rec) != "cross_site" || len(rec.Result().Cookies()) != 0 {
			t.Errorf("sign-in with %v: %d %s, want 403 cross_site and no cookie", hdr, rec.Code, rec.Body)
		}
	}
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8082"},
		{"Origin": "http://127.0.0.1:8082"},
		nil, // not a browser: curl with the token in hand
	} {
		if rec := serve(h, "POST", "/admin/ui/login", "", form, hdr); rec.Code != http.StatusSeeOther {
			t.Errorf("sign-in with %v: %d, want 303", hdr, rec.Code)
		}
	}
	// Sign-out and the page's controls are held to the same rule: another site cannot end the
	// session or pause a sale through it.
	c := signInRec(t, h, servicetest.AliceToken)
	if rec := serve(h, "POST", "/admin/ui/logout", "", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}, c); rec.Code != 403 {
		t.Errorf("cross-site sign-out: %d", rec.Code)
	}
	if _, ok := s.Cockpit.Session(c.Value); !ok {
		t.Error("a refused cross-site sign-out ended the session")
	}
	rec := serve(h, "POST", "/admin/ui/api/sales/s1/pause", "", nil, map[string]string{"X-Seckill-UI": "1", "Origin": "http://evil.example"}, c)
	if rec.Code != 403 || refusalCode(t, rec) != "cross_site" {
		t.Errorf("cross-site control: %d %s", rec.Code, rec.Body)
	}
}

func TestFailedLoginsAreRateLimited(t *testing.T) {
	_, h, logs, clock := cockpitService(t)
	const mallory, other = "198.51.100.7:5555", "203.0.113.9:6666"
	var guesses []string
	for i := 0; i < 5; i++ {
		g := "guess-" + strconv.Itoa(i) + "-" + servicetest.AliceToken[:20]
		guesses = append(guesses, g)
		if rec := serve(h, "POST", "/admin/ui/login", mallory, url.Values{"token": {g}}, nil); rec.Code != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
		}
		*clock = clock.Add(time.Second)
	}
	// The sixth try is refused before the token is looked at, the right token too.
	rec := serve(h, "POST", "/admin/ui/login", mallory, url.Values{"token": {servicetest.AliceToken}}, nil)
	if rec.Code != 429 || refusalCode(t, rec) != "rate_limited" || len(rec.Result().Cookies()) != 0 {
		t.Fatalf("after 5 failures: %d %s, want 429 rate_limited", rec.Code, rec.Body)
	}
	if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 50 || ra > 60 {
		t.Fatalf("Retry-After %q: want the rest of the minute (55 s)", rec.Header().Get("Retry-After"))
	}
	// Another client is not held back by mallory's failures.
	if rec := serve(h, "POST", "/admin/ui/login", other, url.Values{"token": {servicetest.AliceToken}}, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("another client: %d", rec.Code)
	}
	// The window ends, and the right token works again.
	*clock = clock.Add(time.Minute)
	if rec := serve(h, "POST", "/admin/ui/login", mallory, url.Values{"token": {servicetest.AliceToken}}, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("after the window: %d", rec.Code)
	}
	// Every failure is logged with the client, and no submitted value is.
	out := logs.String()
	if n := strings.Count(out, "cockpit sign-in refused"); n != 5 || !strings.Contains(out, "198.51.100.7") || !strings.Contains(out, "rate limited") {
		t.Fatalf("log: %d refusals logged, want 5 naming the client, and the limit:\n%s", n, out)
	}
	for _, g := range append(guesses, servicetest.AliceToken) {
		if strings.Contains(out, g) {
			t.Fatalf("the log shows a submitted token %q", g)
		}
	}
}

func TestTheCockpitPagesForbidFramingAndRunOnlyTheirOwnScript(t *testing.T) {
	_, h, _, _ := cockpitService(t)
	check := func(what string, rec *httptest.ResponseRecorder) string {
		t.Helper()
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
			t.Errorf("%s: CSP %q, want frame-ancestors 'none', default-src 'none', no inline script but by nonce", what, csp)
		}
		return csp
	}
	check("the login page", serve(h, "GET", "/admin/ui", "", nil, nil))
	check("a failed sign-in", serve(h, "POST", "/admin/ui/login", "", url.Values{"token": {"nope"}}, nil))
	c := signInRec(t, h, servicetest.AliceToken)
	rec := serve(h, "GET", "/admin/ui", "", nil, nil, c)
	csp := check("the cockpit", rec)
	m := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9+/]+)'`).FindStringSubmatch(csp)
	if m == nil || !strings.Contains(rec.Body.String(), `<script nonce="`+m[1]+`">`) {
		t.Fatalf("the cockpit's script does not carry the CSP's nonce (CSP %q)", csp)
	}
	if again := check("the cockpit again", serve(h, "GET", "/admin/ui", "", nil, nil, c)); again == csp {
		t.Error("two answers share a nonce")
	}
}
