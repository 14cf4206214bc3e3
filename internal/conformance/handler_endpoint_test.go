package conformance

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

// A handler's endpoints answer alike: a refusal's own Retry-After is kept (429
// too_many_challenges says when the oldest open challenge expires), others get the handler's;
// every answer is counted under its endpoint, a shed call under shed.
func TestEndpointsCountAnswersAndKeepARefusalsOwnRetryAfter(t *testing.T) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "r"}, []string{"endpoint", "answer"})
	shed := prometheus.NewCounter(prometheus.CounterOpts{Name: "s"})
	e := handler.Endpoints{RetryAfter: 2 * time.Second, Requests: requests, Shed: shed, Name: "test"}

	w := httptest.NewRecorder()
	own := handler.Refusal{Status: http.StatusTooManyRequests, Code: "too_many", Message: "m", RetryAfter: 9 * time.Second}
	if err := e.Refuse(w, "challenge", own); err != nil || w.Code != 429 || w.Header().Get("Retry-After") != "9" {
		t.Fatalf("own Retry-After: %d %q %v", w.Code, w.Header().Get("Retry-After"), err)
	}
	w = httptest.NewRecorder()
	if err := e.Unavailable(w, "enter", edge.ErrShed); err != nil || w.Code != 503 || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("shed: %d %q %v", w.Code, w.Header().Get("Retry-After"), err)
	}
	w = httptest.NewRecorder()
	if err := e.MethodNotAllowed(w, "queue", "GET"); err != nil || w.Code != 405 || w.Header().Get("Allow") != "GET" {
		t.Fatalf("405: %d %q %v", w.Code, w.Header().Get("Allow"), err)
	}
	w = httptest.NewRecorder()
	if err := e.Answer(w, "room", "open", http.StatusOK, map[string]string{"state": "open"}); err != nil || w.Body.String() != `{"state":"open"}` ||
		w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("answer: %d %s %v", w.Code, w.Body, err)
	}
	for _, c := range []struct {
		endpoint, answer string
	}{{"challenge", "too_many"}, {"enter", "unavailable"}, {"queue", "bad_request"}, {"room", "open"}} {
		if n := testutil.ToFloat64(requests.WithLabelValues(c.endpoint, c.answer)); n != 1 {
			t.Errorf("%s/%s counted %v times, want 1", c.endpoint, c.answer, n)
		}
	}
	if n := testutil.ToFloat64(shed); n != 1 {
		t.Errorf("shed counted %v, want 1", n)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	if !handler.WantsHTML(req) || handler.WantsHTML(httptest.NewRequest("GET", "/", nil)) {
		t.Fatal("WantsHTML")
	}
}
