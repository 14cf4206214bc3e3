package handlertest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// NewClient is the HTTP client of a test that loads a gateway: 30 seconds a request, up to
// idle idle connections kept per host, for 5 seconds each.
func NewClient(idle int) *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: idle, IdleConnTimeout: 5 * time.Second},
	}
}

// Call sends method url through c as user (the demo identity header X-User-ID; none for "")
// with body ("" for none) and headers, and decodes the answer's JSON into into (the test's own
// reply type); it returns the status, the Retry-After header and the raw body. A transport
// error fails the test and returns a zero status.
func Call(t testing.TB, c *http.Client, method, url, user, body string, headers map[string]string, into any) (status int, retry, raw string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, "", ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, into)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}
