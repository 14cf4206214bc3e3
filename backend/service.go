package backend

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/draw"
	"github.com/seckilledge/seckill/backend/drawapi"
	"github.com/seckilledge/seckill/backend/internal/auth"
	"github.com/seckilledge/seckill/backend/internal/baseline"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/backend/report"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/backend/ui"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/caddymodule/reportpage"
	"github.com/seckilledge/seckill/contract/admin"
	drawmath "github.com/seckilledge/seckill/contract/draw"
)

// Options are what the backend's parts are built from: its stores, lock, tokens and settings.
// Run fills them from Config; tests and tools fill them in themselves and call New.
type Options struct {
	Pool        *pgxpool.Pool
	Redis       redis.UniversalClient
	Locker      lock.Locker
	Compensator *orders.Compensator
	Log         *slog.Logger
	// AdminToken is the single admin token of older setups (SECKILL_ADMIN_TOKEN); Tokens, when
	// not empty, holds every named token instead (SECKILL_ADMIN_TOKENS, ParseTokens).
	AdminToken string
	Tokens     *Tokens
	// Webhooks delivers order events to the shop (nil: no signing secret, no delivery).
	Webhooks *webhook.Worker
	// Retention keeps a sale's Redis keys this long after it ends (0: 24h).
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
	// Now is the clock (tests inject one; nil: time.Now).
	Now func() time.Time
	// Drand fetches the draws' beacon rounds and Beacon is the chain new draws name
	// (Config.DrandConfig; both nil: draws are commit-reveal only).
	Drand  *draw.Drand
	Beacon *drawmath.Beacon
	// ReportKey signs the fairness reports (SECKILL_REPORT_KEY; nil: none is published).
	ReportKey *report.Key
}

// Service is the backend's parts, each built once by New, which also wires the calls they make
// to one another. Handler and OrderHandler mount their routes; Run runs their loops. Tests
// reach a part through its field.
type Service struct {
	Log *slog.Logger
	// Guard is the admin listener's role check over the tokens (backend/internal/auth).
	Guard auth.Guard
	// Sales creates, preheats, reports and rebalances sales (backend/sales).
	Sales *sales.Sales
	// Controls are the operator's controls and the audit trail (backend/controls).
	Controls *controls.Controls
	// Reconciler compares a sale's Redis state with Postgres and repairs Redis (backend/reconcile).
	Reconciler *reconcile.Reconciler
	// Draws runs the sales in draw mode (backend/draw); DrawAPI is their public reads
	// (backend/drawapi).
	Draws   *draw.Runner
	DrawAPI *drawapi.API
	// Orders is the buyers' order status, Shop the shop's payment call and Sweeper the release
	// of unpaid orders (backend/orders); Compensator gives Redis back the units of orders that
	// ended failed or cancelled.
	Orders      *orders.API
	Shop        *orders.Shop
	Sweeper     *orders.Sweeper
	Compensator *orders.Compensator
	// Webhooks is the delivery worker (nil: none) and Hooks its admin routes (backend/webhook).
	Webhooks *webhook.Worker
	Hooks    *webhook.Admin
	// Cockpit is the live page (backend/ui) with its sessions and failed-login counts.
	Cockpit *ui.Cockpit
	// Baselines are the naive benchmark endpoints, mounted only when asked
	// (backend/internal/baseline).
	Baselines *baseline.Baselines
	// Reports builds, signs, stores and serves each ended sale's fairness report (backend/report).
	Reports *report.Publisher
}

// New builds every part of the backend once from o and wires them together here, in one
// place: a preheat restores a paused sale through the controls; a stock change that was
// interrupted ends with reconcile; reconcile rebalances a sharded sale through the sales; the
// sales, the draws, the shop and the sweeper tell the webhook worker of the events they wrote.
func New(o Options) *Service {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	tokens := o.Tokens
	if tokens.Empty() && o.AdminToken != "" {
		tokens = auth.Single(o.AdminToken)
	}
	// The shard count of each sale, cached once for the sales and reconcile alike.
	counts := &shards.Counts{}
	var checkURL func(context.Context, string) error
	var wake func()
	if o.Webhooks != nil {
		checkURL, wake = o.Webhooks.CheckURL, o.Webhooks.Wake
	}
	s := &Service{Log: o.Log, Guard: auth.Guard{Tokens: tokens}, Webhooks: o.Webhooks, Compensator: o.Compensator}
	s.Sales = &sales.Sales{Pool: o.Pool, Redis: o.Redis, Locker: o.Locker, Log: o.Log,
		Retention: o.Retention, Namespace: o.Namespace, Shards: counts, CheckURL: checkURL,
		Beacon: o.Beacon, DrandEndpoints: o.Drand != nil}
	s.Reconciler = &reconcile.Reconciler{Pool: o.Pool, Redis: o.Redis, Log: o.Log, Now: now, Grace: o.Grace,
		Locker: o.Locker, Compensator: o.Compensator, Webhooks: o.Webhooks, Shards: counts,
		Rebalance: s.Sales.AfterReconcile}
	s.Controls = &controls.Controls{Pool: o.Pool, Redis: o.Redis, Log: o.Log, Now: now, Locker: o.Locker,
		Retention: s.Sales.RetentionOrDefault(), Reconcile: s.Reconciler.Reconcile}
	s.Sales.RestorePaused = s.Controls.RestorePaused
	s.Draws = &draw.Runner{Pool: o.Pool, Redis: o.Redis, Locker: o.Locker, Log: o.Log,
		DefaultWebhook: o.Webhooks.HasDefaultURL(), Wake: wake, Drand: o.Drand}
	if o.Compensator != nil && o.Compensator.Released == nil {
		o.Compensator.Released = s.Draws.Released
	}
	s.DrawAPI = &drawapi.API{Pool: o.Pool, Log: o.Log, User: httpapi.UserFrom}
	s.Orders = &orders.API{Pool: o.Pool, Redis: o.Redis, Log: o.Log}
	s.Shop = &orders.Shop{Pool: o.Pool, Log: o.Log, Webhooks: o.Webhooks}
	s.Sweeper = &orders.Sweeper{Pool: o.Pool, Locker: o.Locker, Compensator: o.Compensator, Log: o.Log,
		Webhooks: o.Webhooks, Lock: o.SweeperLock}
	s.Hooks = &webhook.Admin{Pool: o.Pool, Worker: o.Webhooks, Log: o.Log}
	s.Reports = &report.Publisher{Pool: o.Pool, Redis: o.Redis, Key: o.ReportKey, Log: o.Log, Now: now,
		Retention: s.Sales.RetentionOrDefault(), Page: reportpage.Must().Serve}
	s.Cockpit = ui.New(ui.Cockpit{Pool: o.Pool, Redis: o.Redis, Log: o.Log, Now: now,
		Lookup: tokens.Lookup, Viewer: s.Guard.Viewer, Sales: s.Controls.SalesEndingAfter,
		Audit: func(ctx context.Context, limit int) ([]admin.AuditEntry, error) {
			return s.Controls.Audit(ctx, "", limit)
		}, ReportKey: s.Reports.PublicKey})
	s.Baselines = &baseline.Baselines{Pool: o.Pool, Redis: o.Redis, Log: o.Log}
	return s
}

// The admin tokens (backend/internal/auth), named here for callers outside the backend
// (seckill-backend's start-up, deploy's checks of the shipped secrets).
type (
	// Tokens holds the named admin tokens; the zero value accepts nothing.
	Tokens = auth.Tokens
	// Principal is who a named token is and what it may do; Role is that "what"
	// (SECKILL_ADMIN_TOKENS=name:token:role).
	Principal = httpapi.Principal
	Role      = httpapi.Role
)

// The roles of SECKILL_ADMIN_TOKENS.
const (
	RoleAdmin  = httpapi.RoleAdmin
	RoleViewer = httpapi.RoleViewer
	RoleShop   = httpapi.RoleShop
)

// ParseTokens reads SECKILL_ADMIN_TOKENS and SECKILL_ADMIN_TOKEN (auth.ParseTokens).
func ParseTokens(named, single string) (*Tokens, error) { return auth.ParseTokens(named, single) }

// SaleSpec is the body of POST /admin/sales and VariantSpec one entry of its variants
// (backend/sales).
type (
	SaleSpec    = sales.SaleSpec
	VariantSpec = sales.VariantSpec
)
