//go:build integration

package ui_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func pageCookie(t *testing.T, srv *httptest.Server, token string) *http.Cookie {
	t.Helper()
	resp, err := noRedirect.PostForm(srv.URL+"/admin/ui/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login with a good token: %d %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

func pageDo(t *testing.T, method, u string, c *http.Cookie, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	if c != nil {
		req.AddCookie(c)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

// The page's sign-in: the token is taken once (the form), a session is kept in an HttpOnly
// SameSite=Strict cookie, and the cookie never lets a cross-site form or a viewer run a
// control.
func TestCockpitSignInKeepsASessionInAStrictCookieAndGuardsTheControls(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	srv := e.ControlServer()
	sale := e.Sale(3)

	if code, body := pageDo(t, "GET", srv.URL+"/admin/ui", nil, nil); code != 401 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("without a cookie: %d, want the login form", code)
	}
	resp, err := noRedirect.PostForm(srv.URL+"/admin/ui/login", url.Values{"token": {"wrong-token-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Fatalf("login with a wrong token: %d %v", resp.StatusCode, resp.Cookies())
	}
	// The form signs in: a session cookie, then the page (ui_auth_test.go covers the session).
	c := pageCookie(t, srv, servicetest.AliceToken)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/admin/ui" || c.Value == servicetest.AliceToken {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/admin/ui, a session id", c)
	}
	if code, body := pageDo(t, "GET", srv.URL+"/admin/ui", c, nil); code != 200 || !strings.Contains(body, "EventSource") || !strings.Contains(body, ">alice<") {
		t.Fatalf("the page: %d", code)
	}
	// A write through the page's bridge needs the page's header (a cross-site form has none).
	if code, _ := pageDo(t, "POST", srv.URL+"/admin/ui/api/sales/"+sale+"/pause", c, nil); code != 403 {
		t.Fatalf("bridge write without X-Seckill-UI: %d", code)
	}
	if st := e.Redis.HGet(context.Background(), "seckill:{sale:"+sale+"}:meta", "state").Val(); st != "open" {
		t.Fatalf("a refused bridge write changed the state to %q", st)
	}
	if code, body := pageDo(t, "POST", srv.URL+"/admin/ui/api/sales/"+sale+"/pause", c, map[string]string{"X-Seckill-UI": "1"}); code != 200 {
		t.Fatalf("bridge pause: %d %s", code, body)
	}
	// A viewer sees the page and its data but runs no control.
	vc := pageCookie(t, srv, servicetest.ViewerToken)
	if code, _ := pageDo(t, "GET", srv.URL+"/admin/ui", vc, nil); code != 200 {
		t.Fatalf("viewer page: %d", code)
	}
	if code, body := pageDo(t, "POST", srv.URL+"/admin/ui/api/sales/"+sale+"/resume", vc, map[string]string{"X-Seckill-UI": "1"}); code != 403 || !strings.Contains(body, "forbidden") {
		t.Fatalf("viewer resume through the page: %d %s", code, body)
	}
	if code, _ := pageDo(t, "GET", srv.URL+"/admin/ui/api/audit?sale="+sale, vc, nil); code != 200 {
		t.Fatalf("viewer audit through the page: %d", code)
	}
	// The event stream needs the cookie too.
	if code, _ := pageDo(t, "GET", srv.URL+"/admin/ui/events", nil, nil); code != 401 {
		t.Fatalf("events without a cookie: %d", code)
	}
}
