package backend

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/draw"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/backend/ui"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract/admin"
	drawmath "github.com/seckilledge/seckill/contract/draw"
)

// Service holds what the HTTP API, the sweeper and reconcile share.
type Service struct {
	Pool        *pgxpool.Pool
	Redis       redis.UniversalClient
	Locker      lock.Locker
	Compensator *orders.Compensator
	Log         *slog.Logger
	// AdminToken is the single admin token of older setups (SECKILL_ADMIN_TOKEN); Tokens, when
	// set, holds every named token instead (SECKILL_ADMIN_TOKENS, see auth.go).
	AdminToken string
	Tokens     *Tokens
	// Webhooks delivers order events to the shop (nil: no signing secret, no delivery).
	Webhooks *webhook.Worker
	// Retention keeps a sale's Redis keys this long after it ends.
	Retention time.Duration
	// Namespace is the deployment recorded in the meta of the sales it preheats: a gateway's
	// relay takes only the outboxes of its own namespace's sales ("" is the unnamed one).
	Namespace string
	// Grace is how long reconcile leaves a buyer without an order alone (its message may be in
	// the outbox or the queue) before it declares the order lost.
	Grace time.Duration
	// SweeperLock is the key of the sweeper's distributed lock (default seckill:lock:sweeper):
	// instances that share it sweep one at a time.
	SweeperLock string
	// Now is the clock (tests inject one).
	Now func() time.Time
	// Drand fetches the draws' beacon rounds and Beacon is the chain new draws name
	// (Config.DrandConfig; both nil: draws are commit-reveal only).
	Drand  *draw.Drand
	Beacon *drawmath.Beacon

	shards shards.Counts
	// page is the live page (backend/ui) with its sessions and failed-login counts, made once.
	pageOnce sync.Once
	page     *ui.Cockpit
	// stockStop stops a stock change between its two stores (tests: controls.Controls.Stop).
	stockStop func(step string) error
	// rebalancerSubscribed is called when RunRebalancer's subscription is confirmed.
	rebalancerSubscribed func()
}

// cockpit returns the live page, made on first use (a Service is built as a struct literal, in
// tests too). It reads through the few functions given here and nothing else of the Service.
func (s *Service) cockpit() *ui.Cockpit {
	s.pageOnce.Do(func() {
		s.page = ui.New(ui.Cockpit{Pool: s.Pool, Redis: s.Redis, Log: s.Log, Now: s.now,
			Lookup: func(token string) (httpapi.Principal, bool) { return s.tokens().Lookup(token) },
			Viewer: s.viewer,
			Sales: func(ctx context.Context, t time.Time, limit int) ([]admin.SaleSummary, error) {
				return s.controls().SalesEndingAfter(ctx, t, limit)
			},
			Audit: func(ctx context.Context, limit int) ([]admin.AuditEntry, error) {
				return s.controls().Audit(ctx, "", limit)
			}})
	})
	return s.page
}

// controls are the operator's controls over the Service's stores, lock and clock
// (backend/controls); a stock change that was interrupted ends with the Service's Reconcile.
func (s *Service) controls() *controls.Controls {
	return &controls.Controls{Pool: s.Pool, Redis: s.Redis, Log: s.Log, Now: s.now, Locker: s.Locker,
		Retention: s.retention(), Reconcile: s.Reconcile,
		Stop: func(step string) error {
			if s.stockStop == nil {
				return nil
			}
			return s.stockStop(step)
		}}
}

// mountControls adds the operator routes to mux: the controls (admin tokens), the sales list
// and the audit trail (viewer tokens too) and the live page (backend/ui). Everything is
// under /admin/, so it follows the admin API to whichever listener serves it.
func (s *Service) mountControls(mux *http.ServeMux, reg *prometheus.Registry) {
	ct := s.controls()
	mux.HandleFunc("GET /admin/sales", s.viewer(ct.HandleListSales))
	mux.HandleFunc("POST /admin/sales/{id}/pause", s.admin(ct.HandlePause))
	mux.HandleFunc("POST /admin/sales/{id}/resume", s.admin(ct.HandleResume))
	mux.HandleFunc("POST /admin/sales/{id}/end", s.admin(ct.HandleEnd))
	mux.HandleFunc("PATCH /admin/sales/{id}", s.admin(ct.HandlePatchSale))
	mux.HandleFunc("POST /admin/sales/{id}/stock", s.admin(ct.HandleStock))
	mux.HandleFunc("GET /admin/audit", s.viewer(ct.HandleAudit))
	s.cockpit().Mount(mux, reg)
}

// sales creates, preheats, reports and rebalances sales (backend/sales) over the Service's
// stores, lock and settings; a preheat restores a paused sale through the controls.
func (s *Service) sales() *sales.Sales {
	var check func(context.Context, string) error
	if s.Webhooks != nil {
		check = s.Webhooks.CheckURL
	}
	return &sales.Sales{Pool: s.Pool, Redis: s.Redis, Locker: s.Locker, Log: s.Log,
		Retention: s.Retention, Namespace: s.Namespace, Shards: &s.shards, CheckURL: check,
		RestorePaused: func(ctx context.Context, tx pgx.Tx, sale string, k int) error {
			return s.controls().RestorePaused(ctx, tx, sale, k)
		},
		Subscribed: s.rebalancerSubscribed, Beacon: s.Beacon, DrandEndpoints: s.Drand != nil}
}

// SaleSpec is the body of POST /admin/sales (backend/sales).
type SaleSpec = sales.SaleSpec

// VariantSpec is one entry of a SaleSpec's variants.
type VariantSpec = sales.VariantSpec

// ParseSaleSpec decodes and validates the body of POST /admin/sales.
func ParseSaleSpec(r io.Reader) (SaleSpec, error) { return sales.ParseSaleSpec(r) }

// CreateSale inserts a sale; created is false when a sale with that id exists.
func (s *Service) CreateSale(ctx context.Context, spec SaleSpec) (bool, error) {
	return s.sales().CreateSale(ctx, spec)
}

// Preheat loads a sale into Redis under the sale's lock (sales.Sales.Preheat).
func (s *Service) Preheat(ctx context.Context, sale string) (admin.PreheatResult, error) {
	return s.sales().Preheat(ctx, sale)
}

// SaleStatus reads a sale from Postgres and Redis (sales.Sales.SaleStatus).
func (s *Service) SaleStatus(ctx context.Context, sale string) (admin.SaleStatus, error) {
	return s.sales().SaleStatus(ctx, sale)
}

// Rebalance evens out a sharded sale's stock over its shards (sales.Sales.Rebalance).
func (s *Service) Rebalance(ctx context.Context, sale string) (admin.RebalanceReport, error) {
	return s.sales().Rebalance(ctx, sale)
}

// RunRebalancer rebalances a sharded sale as soon as one of its shards runs dry, until ctx
// ends (sales.Sales.RunRebalancer).
func (s *Service) RunRebalancer(ctx context.Context) { s.sales().RunRebalancer(ctx) }

func (s *Service) retention() time.Duration { return s.sales().RetentionOrDefault() }

func (s *Service) withLock(ctx context.Context, key string, wait time.Duration, fn func(lock.Held) error) error {
	return lock.With(ctx, s.Locker, key, wait, fn)
}

// fenced runs fn in a transaction that first records held's fencing token for key; fn's writes
// commit only if no newer holder of the lock has written.
func (s *Service) fenced(ctx context.Context, key string, held lock.Held, fn func(pgx.Tx) error) error {
	return lock.Fenced(ctx, s.Pool, key, held, fn)
}

// Reconcile compares a sale's Redis state with Postgres and repairs Redis, under the sale's
// lock (backend/reconcile): the Service gives it its stores, lock, clock and rebalance.
func (s *Service) Reconcile(ctx context.Context, sale string) (admin.ReconcileReport, error) {
	rc := &reconcile.Reconciler{Pool: s.Pool, Redis: s.Redis, Log: s.Log, Now: s.now, Grace: s.Grace,
		Locker: s.Locker, Compensator: s.Compensator, Webhooks: s.Webhooks, Shards: &s.shards,
		Rebalance: s.sales().AfterReconcile}
	return rc.Reconcile(ctx, sale)
}

func (s *Service) handleReconcile(w http.ResponseWriter, r *http.Request) {
	rep, err := s.Reconcile(r.Context(), r.PathValue("id"))
	s.sales().AnswerLocked(w, "reconcile", err, rep)
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Handler is the admin listener's API (SECKILL_BACKEND_ADMIN_LISTEN, loopback by default): the
// admin API, the shop's payment confirmations, /metrics and /healthz, and the naive baselines
// when baselines is true. The gateway never proxies it. OrderHandler is the buyers' side.
func (s *Service) Handler(reg *prometheus.Registry, baselines bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	sl := s.sales() // create, status, preheat, rebalance: backend/sales
	mux.HandleFunc("POST /admin/sales", s.admin(sl.HandleCreateSale))
	mux.HandleFunc("GET /admin/sales/{id}", s.viewer(sl.HandleSaleStatus))
	mux.HandleFunc("POST /admin/sales/{id}/preheat", s.admin(sl.HandlePreheat))
	mux.HandleFunc("POST /admin/sales/{id}/reconcile", s.admin(s.handleReconcile))
	mux.HandleFunc("POST /admin/sales/{id}/rebalance", s.admin(sl.HandleRebalance))
	// The shop hand-over: payment is the shop's word (role shop only, shop.go); webhook
	// deliveries are listed by viewers and replayed by admins (backend/webhook).
	mux.HandleFunc("POST /shop/orders/{id}/paid", s.allow(s.handleShopPaid, httpapi.RoleShop))
	hooks := &webhook.Admin{Pool: s.Pool, Worker: s.Webhooks, Log: s.Log}
	mux.HandleFunc("GET /admin/webhooks", s.viewer(hooks.HandleList))
	mux.HandleFunc("POST /admin/webhooks/{id}/replay", s.admin(hooks.HandleReplay))
	// Operator controls, audit trail and the live page (backend/controls, backend/ui).
	s.mountControls(mux, reg)
	s.mountDraw(mux) // the draws: run now, status (routes.go, backend/draw)
	if baselines {
		// Benchmark-only, and they write orders past every guard of the gate: admin token
		// required, and never for a sale the gate is selling (baseline.go).
		mux.HandleFunc("POST /baseline/pessimistic/{sale}", s.admin(s.handlePessimistic))
		mux.HandleFunc("POST /baseline/optimistic/{sale}", s.admin(s.handleOptimistic))
	}
	return recoverer(s.Log, jsonFallback(mux))
}

// OrderHandler is the order listener's API (SECKILL_BACKEND_LISTEN), which the gateway proxies
// under /orders/: read-only order status for the buyer, the public reads of a draw
// (backend/drawapi) and /healthz. Nothing of the admin listener is served here.
func (s *Service) OrderHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /orders/{id}", s.handleGetOrder)
	s.mountDraws(mux)
	return recoverer(s.Log, jsonFallback(mux))
}

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

func isRedisNil(err error) bool { return errors.Is(err, redis.Nil) }

// newRedisClient connects to one Redis at addr, or to a Redis Cluster when addr is a
// comma-separated list of seeds (a sharded sale spreads over the cluster's masters; every
// script of the backend touches one hash slot, so all of it runs there unchanged).
func newRedisClient(addr, password string) redis.UniversalClient {
	if seeds := strings.Split(addr, ","); len(seeds) > 1 {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Password: password})
	}
	return redis.NewClient(&redis.Options{Addr: addr, Password: password})
}
