package backend

import (
	"net/http"
	"strings"
	"time"

	"github.com/seckilledge/seckill/backend/draw"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
)

// jsonFallback answers what the mux has no route for in the contract's JSON: 404 not_found, or
// 405 method_not_allowed with Allow when the path exists under other methods. (ServeMux's own
// answers are text/plain, and every refusal of the contract is JSON with a code.)
func jsonFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := r.WithContext(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			httpapi.Refuse(w, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, r.Method+" is not allowed here")
			return
		}
		httpapi.Refuse(w, http.StatusNotFound, httpapi.CodeNotFound, "no such route")
	})
}

func healthz(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }

// userFrom reads the buyer's id: exactly one valid X-User-ID. Two values are refused (400):
// the gateway refuses them too, and taking the first would let a client choose which one counts.
func (s *Service) userFrom(w http.ResponseWriter, r *http.Request) (string, bool) {
	vals := r.Header.Values("X-User-ID")
	if len(vals) > 1 {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "X-User-ID given more than once")
		return "", false
	}
	user := r.Header.Get("X-User-ID")
	if !contract.ValidID(user) {
		httpapi.Refuse(w, http.StatusUnauthorized, contract.CodeUnauthenticated, "a valid X-User-ID is required")
		return "", false
	}
	return user, true
}

// drawInterval is the draw loop's period: a draw starts within it of closes_at, and a wave
// within it of the previous wave's claim_until.
const drawInterval = time.Second

// draws runs the sales in draw mode (backend/draw) over the Service's stores and lock; its
// events wake the webhook worker.
func (s *Service) draws() *draw.Runner {
	var wake func()
	if s.Webhooks != nil {
		wake = s.Webhooks.Wake
	}
	return &draw.Runner{Pool: s.Pool, Redis: s.Redis, Locker: s.Locker, Log: s.Log,
		DefaultWebhook: s.Webhooks.HasDefaultURL(), Wake: wake, Drand: s.Drand}
}

// mountDraw adds the draw's admin routes (docs/draw.md): run the draw now (admin, audited) and
// its status (viewers too).
func (s *Service) mountDraw(mux *http.ServeMux) {
	d := s.draws()
	mux.HandleFunc("POST /admin/sales/{id}/draw", s.admin(d.HandleRun))
	mux.HandleFunc("GET /admin/sales/{id}/draw", s.viewer(d.HandleStatus))
}
