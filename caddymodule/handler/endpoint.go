package handler

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/contract"
)

// Endpoints answers the endpoints of a handler that serves several (the waiting room's, the
// draw's): its refusals and JSON answers, each counted under its endpoint, Retry-After on the
// retryable ones, a failed Redis call logged. One copy for every such handler (the
// draw and the room had one each).
type Endpoints struct {
	Writer Writer
	// RetryAfter is sent with 429 and 503 refusals that carry none of their own.
	RetryAfter time.Duration
	// Requests counts answers by endpoint and answer (the state, or the refusal code); Shed
	// counts requests shed without touching Redis.
	Requests *prometheus.CounterVec
	Shed     prometheus.Counter
	Logger   *zap.Logger
	// Name is the handler's in log lines ("room", "draw").
	Name string
}

// Refuse answers ref and counts it under endpoint.
func (e Endpoints) Refuse(w http.ResponseWriter, endpoint string, ref Refusal) error {
	e.count(endpoint, ref.Code)
	if ref.RetryAfter == 0 {
		ref.RetryAfter = e.RetryAfter
	}
	return e.Writer.Write(w, ref)
}

// Unavailable answers 503 for a Redis call that failed, timed out or was shed.
func (e Endpoints) Unavailable(w http.ResponseWriter, endpoint string, err error) error {
	if errors.Is(err, edge.ErrShed) {
		if e.Shed != nil {
			e.Shed.Inc()
		}
	} else if err != nil && e.Logger != nil {
		e.Logger.Warn(e.Name+": Redis call failed", zap.String("endpoint", endpoint), zap.Error(err))
	}
	return e.Refuse(w, endpoint, Unavailable)
}

// MethodNotAllowed answers 405 (code bad_request) with the Allow header.
func (e Endpoints) MethodNotAllowed(w http.ResponseWriter, endpoint, allow string) error {
	w.Header().Set("Allow", allow)
	return e.Refuse(w, endpoint, Refusal{Status: http.StatusMethodNotAllowed, Code: contract.CodeBadRequest,
		Message: "method not allowed; use " + allow})
}

// Answer writes body as JSON with status, counted under endpoint and label.
func (e Endpoints) Answer(w http.ResponseWriter, endpoint, label string, status int, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return e.Unavailable(w, endpoint, err)
	}
	e.count(endpoint, label)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}

// WantsHTML reports whether a request asks for a page (a browser's Accept: text/html).
func WantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// count counts an answer. A handler refuses some requests (a cross-site write, a bad path)
// before it needs anything provisioned, so unset counters count nothing rather than panic.
func (e Endpoints) count(endpoint, label string) {
	if e.Requests != nil {
		e.Requests.WithLabelValues(endpoint, label).Inc()
	}
}
