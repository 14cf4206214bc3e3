package backend

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/seckilledge/seckill/backend/draw"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/backend/webhook"
)

// Handler is the admin listener's API (SECKILL_BACKEND_ADMIN_LISTEN, loopback by default): the
// admin API, the shop's payment confirmations, /metrics and /healthz, and the naive baselines
// when baselines is true. The gateway never proxies it. OrderHandler is the buyers' side.
// Every route of it is here, each behind its role (Guard).
func (s *Service) Handler(reg *prometheus.Registry, baselines bool) http.Handler {
	mux := http.NewServeMux()
	g := s.Guard
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Sales: create, status, preheat, reconcile, rebalance (backend/sales, backend/reconcile).
	sl := s.Sales
	mux.HandleFunc("POST /admin/sales", g.Admin(sl.HandleCreateSale))
	mux.HandleFunc("GET /admin/sales/{id}", g.Viewer(sl.HandleSaleStatus))
	mux.HandleFunc("POST /admin/sales/{id}/preheat", g.Admin(sl.HandlePreheat))
	mux.HandleFunc("POST /admin/sales/{id}/invitations", g.Admin(sl.HandleInvitations))
	mux.HandleFunc("POST /admin/sales/{id}/reconcile", g.Admin(func(w http.ResponseWriter, r *http.Request) {
		rep, err := s.Reconciler.Reconcile(r.Context(), r.PathValue("id"))
		sl.AnswerLocked(w, "reconcile", err, rep)
	}))
	mux.HandleFunc("POST /admin/sales/{id}/rebalance", g.Admin(sl.HandleRebalance))
	// The shop hand-over: payment is the shop's word (role shop only, backend/orders' Shop);
	// webhook deliveries are listed by viewers and replayed by admins (backend/webhook).
	mux.HandleFunc("POST /shop/orders/{id}/paid", g.Shop(s.Shop.HandlePaid))
	mux.HandleFunc("GET /admin/webhooks", g.Viewer(s.Hooks.HandleList))
	mux.HandleFunc("POST /admin/webhooks/{id}/replay", g.Admin(s.Hooks.HandleReplay))
	// Operator controls (admin tokens), the sales list and the audit trail (viewer tokens too)
	// and the live page (backend/controls, backend/ui). Everything is under /admin/, so it
	// follows the admin API to whichever listener serves it.
	ct := s.Controls
	mux.HandleFunc("GET /admin/sales", g.Viewer(ct.HandleListSales))
	mux.HandleFunc("POST /admin/sales/{id}/pause", g.Admin(ct.HandlePause))
	mux.HandleFunc("POST /admin/sales/{id}/resume", g.Admin(ct.HandleResume))
	mux.HandleFunc("POST /admin/sales/{id}/end", g.Admin(ct.HandleEnd))
	mux.HandleFunc("PATCH /admin/sales/{id}", g.Admin(ct.HandlePatchSale))
	mux.HandleFunc("POST /admin/sales/{id}/stock", g.Admin(ct.HandleStock))
	mux.HandleFunc("GET /admin/audit", g.Viewer(ct.HandleAudit))
	s.Cockpit.Mount(mux, reg)
	// The draws (docs/draw.md): run the draw now (admin, audited) and its status (viewers too).
	mux.HandleFunc("POST /admin/sales/{id}/draw", g.Admin(s.Draws.HandleRun))
	mux.HandleFunc("GET /admin/sales/{id}/draw", g.Viewer(s.Draws.HandleStatus))
	// The fairness report (docs/operator.md): publish an ended sale's now (admin).
	mux.HandleFunc("POST /admin/sales/{id}/report", g.Admin(s.Reports.HandlePublish))
	if baselines {
		// Benchmark-only, and they write orders past every guard of the gate: admin token
		// required, and never for a sale the gate is selling (backend/internal/baseline).
		s.Baselines.Mount(mux, g.Admin)
	}
	return recoverer(s.Log, jsonFallback(mux))
}

// OrderHandler is the order listener's API (SECKILL_BACKEND_LISTEN), which the gateway proxies
// under /orders/: read-only order status for the buyer, the public reads of a draw
// (backend/drawapi, with the verified user in X-User-ID read exactly as GET /orders/{id} reads
// it) and /healthz. Nothing of the admin listener is served here.
func (s *Service) OrderHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /orders/{id}", s.Orders.HandleGet)
	s.DrawAPI.Mount(mux)
	s.Reports.Mount(mux)
	return recoverer(s.Log, jsonFallback(mux))
}

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

// recoverer turns a panic into 503 unavailable: no request may crash the process.
func recoverer(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				log.Error("handler panic", "panic", v, "path", r.URL.Path)
				httpapi.Unavailable(w)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// NewMetricsRegistry is the backend's Prometheus registry, as GET /metrics serves it (the
// Grafana dashboard's test checks its metric names against it). Labels are bounded: a reason or
// an outcome from a fixed set, never a sale, order or user id. Every part's metrics are its own
// package's.
func NewMetricsRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(orders.Collectors()...)
	r.MustRegister(reconcile.Collectors()...)
	r.MustRegister(webhook.Collectors()...)
	r.MustRegister(sales.Collectors()...)
	r.MustRegister(draw.Collectors()...)
	return r
}
