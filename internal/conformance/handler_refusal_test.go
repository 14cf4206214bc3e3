package conformance

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
)

func TestEveryRefusalIsTheContractJSONWithRetryAfterOnlyWhenRetryable(t *testing.T) {
	cases := []struct {
		r     handler.Refusal
		retry string
	}{
		{handler.Unauthenticated, ""},
		{handler.BadRequest, ""},
		{handler.UnknownSale, ""},
		{handler.SoldOut, ""},
		{handler.Refusal{Status: 429, Code: contract.CodeRateLimited, Message: "slow", RetryAfter: 1500 * time.Millisecond}, "2"},
		{handler.Refusal{Status: 503, Code: contract.CodeUnavailable, Message: "later"}, "1"},
		{handler.Refusal{Status: 503, Code: contract.CodePaused, Message: "paused", RetryAfter: 30 * time.Second}, "30"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		if err := (handler.Writer{}).Write(rec, c.r); err != nil {
			t.Fatal(err)
		}
		var body contract.Refusal
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Code != c.r.Code || body.Message != c.r.Message {
			t.Errorf("%s: body %q (%v)", c.r.Code, rec.Body, err)
		}
		h := rec.Header()
		if rec.Code != c.r.Status || h.Get("Retry-After") != c.retry || h.Get("Content-Type") != "application/json" ||
			h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v, want %d with Retry-After %q", c.r.Code, rec.Code, h, c.r.Status, c.retry)
		}
	}
}

func TestAlreadyBoughtCarriesTheOrderID(t *testing.T) {
	rec := httptest.NewRecorder()
	r := handler.AlreadyBought
	r.OrderID = `o"1`
	_ = (handler.Writer{}).Write(rec, r)
	var body contract.Refusal
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.OrderID != `o"1` {
		t.Fatalf("body %q (%v): want the order id, escaped", rec.Body, err)
	}
}

func TestHandleErrorsReturnsACaddyErrorWithTheRefusalAndNoBody(t *testing.T) {
	rec := httptest.NewRecorder()
	err := handler.Writer{HandleErrors: true}.Write(rec, handler.Refusal{Status: 429, Code: contract.CodeRateLimited, Message: "slow", RetryAfter: time.Second})
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) || he.StatusCode != 429 {
		t.Fatalf("error %v, want a caddyhttp 429", err)
	}
	if r, ok := handler.As(err); !ok || r.Code != contract.CodeRateLimited || he.Err.Error() != "rate_limited: slow" {
		t.Fatalf("refusal %+v in %v", r, err)
	}
	if rec.Body.Len() != 0 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("body %q, headers %v: want none but Retry-After", rec.Body, rec.Header())
	}
}

func TestJitterOnlyLengthensRetryAfter(t *testing.T) {
	w := handler.Writer{Jitter: 3 * time.Second}
	seen := map[string]bool{}
	for range 200 {
		rec := httptest.NewRecorder()
		_ = w.Write(rec, handler.Refusal{Status: 429, Code: contract.CodeRateLimited, RetryAfter: time.Second})
		seen[rec.Header().Get("Retry-After")] = true
	}
	for v := range seen {
		if v != "1" && v != "2" && v != "3" && v != "4" {
			t.Fatalf("Retry-After %s outside [1, 4]", v)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("Retry-After never varied: %v", seen)
	}
}

func TestOnlyCanonicalPathsPass(t *testing.T) {
	cases := map[string]bool{
		"/seckill/s1/buy":          true,
		"/seckill/s1/buy/":         true,
		"/":                        true,
		"/seckill/s1/../s2/buy":    false,
		"/seckill/./s1/buy":        false,
		"/seckill//s1/buy":         false,
		"/seckill/s1/buy/..":       false,
		"/seckill/s1/token/../buy": false,
	}
	for p, want := range cases {
		r := &http.Request{URL: mustURL(p)}
		if _, ok := handler.CheckPath(r); ok != want {
			t.Errorf("CheckPath(%q) = %v, want %v", p, ok, want)
		}
	}
}

func TestSecondsRoundsUpToAtLeastOne(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, time.Minute: 60} {
		if got := handler.Seconds(d); got != want {
			t.Errorf("Seconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// BenchmarkRefusalWrite is one refusal written: a 429 with Retry-After (the throttle's and the
// shed's answer under a flood) and a 409 sold_out (the gate's after sell-out).
//
//	go test -run '^$' -bench RefusalWrite -benchmem -benchtime 2000x ./internal/conformance/
func BenchmarkRefusalWrite(b *testing.B) {
	for _, c := range []struct {
		name string
		r    handler.Refusal
	}{
		{"rate_limited", handler.Refusal{Status: 429, Code: contract.CodeRateLimited, Message: "too many requests, slow down", RetryAfter: 1500 * time.Millisecond}},
		{"sold_out", handler.SoldOut},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				if err := (handler.Writer{}).Write(w, c.r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discard is a response writer reused between refusals.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

func mustURL(p string) *url.URL { return &url.URL{Path: p} }
