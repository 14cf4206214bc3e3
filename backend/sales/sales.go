// Package sales is the backend's side of a sale's life before and around its orders: creating
// it (POST /admin/sales: the spec, its variants and per-user limit, its room), preheating it into
// Redis (one meta hash, or K shards and a base hash; the waiting room's set-up), its status (GET
// /admin/sales/{id}), and the rebalance of a sharded sale's stock over its shards (on demand,
// after reconcile, and as soon as a shard runs dry: RunRebalancer). A Sales is given the few
// things it uses (the stores, the lock, retention, namespace, the webhook URL check, the
// controls' restore of a paused sale), wired by the backend (backend.New).
package sales

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/reconcile"
	"github.com/seckilledge/seckill/backend/webhook"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/strictjson"
	"github.com/seckilledge/seckill/lua"
)

// Sales creates, preheats, reports and rebalances sales. A zero field means its default
// (Retention 24h); the backend builds one, once (backend.New).
type Sales struct {
	Pool   *pgxpool.Pool
	Redis  redis.UniversalClient
	Locker lock.Locker
	Log    *slog.Logger
	// Retention keeps a sale's Redis keys this long after it ends (0: 24h).
	Retention time.Duration
	// Namespace is the deployment recorded in the meta of the sales it preheats.
	Namespace string
	// Shards is the cached shard count of each sale, shared with the order side.
	Shards *shards.Counts
	// CheckURL checks a sale's webhook_url against the delivery policy (backend/webhook's
	// Worker.CheckURL); nil: no webhook delivery, and a sale may not name a URL.
	CheckURL func(ctx context.Context, url string) error
	// RestorePaused writes back, in the preheat's fenced transaction, the pause the operator
	// set on a sale (controls.Controls.RestorePaused).
	RestorePaused func(ctx context.Context, tx pgx.Tx, sale string, shards int) error
	// Subscribed is called when RunRebalancer's subscription is confirmed (tests wait for it).
	Subscribed func()
	// Beacon is the drand chain a new draw names when its spec names none (SECKILL_DRAND_*;
	// nil: draws are commit-reveal only unless their spec names a chain). DrandEndpoints says
	// the backend has drand endpoints to fetch rounds from: without, a spec naming a chain is
	// refused (nothing could ever draw it).
	Beacon         *draw.Beacon
	DrandEndpoints bool
}

// SaleSpec is the body of POST /admin/sales.
type SaleSpec struct {
	ID       string    `json:"id"`
	Stock    int       `json:"stock"`
	StartsAt time.Time `json:"starts_at"`
	EndsAt   time.Time `json:"ends_at"`
	// PayWithin is how long a buyer has to pay (seconds or a Go duration string); default 15m.
	PayWithin admin.Duration `json:"pay_within,omitempty"`
	// Shards splits the sale's Redis stock over this many keys in different hash slots (hot
	// sales on Redis Cluster; docs/scaling.md). 0 or 1 (default): unsharded. At most 64.
	Shards int `json:"shards,omitempty"`
	// WebhookURL receives this sale's order events (http or https); empty: the backend's
	// default, SECKILL_WEBHOOK_URL. POST /admin/sales refuses one that is or resolves inside
	// (loopback, private, link-local, metadata...) unless SECKILL_WEBHOOK_ALLOW_CIDRS lists it
	// (never link-local or metadata).
	WebhookURL string `json:"webhook_url,omitempty"`
	// Room gives the sale a waiting room (seckill_room, docs/room.md); nil: none. Rooms are
	// for unsharded sales: the token script must reach the room's hash slot.
	Room *admin.RoomSpec `json:"room,omitempty"`
	// Variants gives the stock per variant instead of Stock (sales_variants.go): 1 to 256,
	// ids like sale ids. A sharded sale splits each variant over its shards.
	Variants []VariantSpec `json:"variants,omitempty"`
	// PerUserLimit is the most units one user may hold in the sale, all variants together:
	// 1 (default) to 1000.
	PerUserLimit int `json:"per_user_limit,omitempty"`
	// Draw puts the sale in draw mode (docs/draw.md); nil: first come, first served.
	Draw *admin.DrawSpec `json:"draw,omitempty"`
}

// Validate checks a sale spec and returns its payment window.
func (s SaleSpec) Validate() (time.Duration, error) {
	switch {
	case !contract.ValidID(s.ID):
		return 0, errors.New("id must match ^[A-Za-z0-9_-]{1,64}$")
	case s.Stock < 0 || s.Stock > admin.MaxStock:
		return 0, errors.New("stock must be between 0 and 1e9")
	case s.StartsAt.IsZero() || s.EndsAt.IsZero():
		return 0, errors.New("starts_at and ends_at (RFC 3339) are required")
	case !s.EndsAt.After(s.StartsAt):
		return 0, errors.New("ends_at must be after starts_at")
	case s.Shards < 0 || s.Shards > contract.MaxShards:
		return 0, fmt.Errorf("shards must be between 1 and %d", contract.MaxShards)
	}
	if err := s.validateVariants(); err != nil {
		return 0, err
	}
	if s.Room != nil {
		if s.Shards > 1 {
			return 0, errors.New("room needs an unsharded sale (shards 0 or 1)")
		}
		if err := s.Room.Validate(); err != nil {
			return 0, err
		}
		// The waitlist holds one released unit of the sale's one stock for one waiter
		// (compensate.lua): it has no per-variant reserve and no offer of several units.
		switch {
		case s.Room.Waitlist && len(s.Variants) > 0:
			return 0, errors.New("room.waitlist: a sale with variants has no waitlist (its released units go back to their variant)")
		case s.Room.Waitlist && s.PerUserLimit > 1:
			return 0, errors.New("room.waitlist: needs per_user_limit absent or 1 (an offer is one unit)")
		}
	}
	if err := s.validateDraw(); err != nil {
		return 0, err
	}
	if s.WebhookURL != "" {
		if err := webhook.ValidURL(s.WebhookURL); err != nil {
			return 0, fmt.Errorf("webhook_url: %w", err)
		}
	}
	pay := 15 * time.Minute
	if s.PayWithin != "" {
		d, err := s.PayWithin.Parse()
		if err != nil || d <= 0 {
			return 0, errors.New("pay_within must be a positive duration like 15m")
		}
		pay = d
	}
	return pay, nil
}

// ParseSaleSpec decodes and validates the body of POST /admin/sales.
func ParseSaleSpec(r io.Reader) (SaleSpec, error) {
	var spec SaleSpec
	// Strict: each key once and spelled as documented (encoding/json keeps the last of two
	// keys and matches any case), so what an audit or a proxy reads is what is created.
	if err := strictjson.Decode(r, &spec); err != nil {
		return spec, fmt.Errorf("body must be JSON {id, stock, starts_at, ends_at, pay_within, shards, webhook_url, room, variants, per_user_limit, draw}: %w", err)
	}
	if _, err := spec.Validate(); err != nil {
		return spec, err
	}
	return spec, nil
}

// CreateSale inserts a sale; created is false when a sale with that id exists.
func (s *Sales) CreateSale(ctx context.Context, spec SaleSpec) (created bool, err error) {
	pay, err := spec.Validate()
	if err != nil {
		return false, err
	}
	var beacon *draw.Beacon
	if spec.Draw != nil {
		if beacon, err = s.beaconFor(spec.Draw); err != nil {
			return false, err
		}
	}
	var room []byte // NULL: no room
	if spec.Room != nil {
		if room, err = json.Marshal(spec.Room); err != nil {
			return false, err
		}
	}
	// One transaction: a sale with variants never exists without them.
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at, pay_within, shards, webhook_url, room, per_user_limit)
			VALUES ($1, $2, $2, $3, $4, make_interval(secs => $5), $6, NULLIF($7, ''), $8::jsonb, $9) ON CONFLICT (id) DO NOTHING`,
			spec.ID, spec.totalStock(), spec.StartsAt, spec.EndsAt, pay.Seconds(), max(spec.Shards, 1), spec.WebhookURL, room, spec.limit())
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		if !created {
			return nil
		}
		if err := insertVariants(ctx, tx, spec.ID, spec.Variants); err != nil {
			return err
		}
		return insertDraw(ctx, tx, spec.ID, spec.Draw, beacon)
	})
	return created, err
}

// HandleCreateSale is POST /admin/sales.
func (s *Sales) HandleCreateSale(w http.ResponseWriter, r *http.Request) {
	spec, err := ParseSaleSpec(http.MaxBytesReader(w, r.Body, 1<<16))
	if errors.Is(err, draw.ErrQuicknetMismatch) {
		httpapi.Refuse(w, http.StatusBadRequest, httpapi.CodeBeaconChainMismatch, err.Error())
		return
	}
	if err != nil {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, err.Error())
		return
	}
	if spec.Draw != nil && spec.Draw.Beacon != nil && !spec.Draw.Beacon.Off && !s.DrandEndpoints {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, ErrNoDrandEndpoint.Error())
		return
	}
	if spec.WebhookURL != "" && s.CheckURL == nil {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "webhook_url needs SECKILL_WEBHOOK_SECRETS on the backend: webhooks are signed")
		return
	}
	if spec.WebhookURL != "" {
		// Not in Validate: the check may look the name up, and depends on the backend's policy.
		if err := s.CheckURL(r.Context(), spec.WebhookURL); err != nil {
			httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "webhook_url: "+err.Error())
			return
		}
	}
	created, err := s.CreateSale(r.Context(), spec)
	if httpapi.RefuseBadValue(w, err, "stock, variants, per_user_limit, starts_at, ends_at, pay_within") {
		s.Log.Warn("create sale: Postgres refused a value of the request", "err", err)
		return
	}
	if err != nil {
		s.Log.Warn("create sale failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	if !created {
		httpapi.Refuse(w, http.StatusConflict, httpapi.CodeSaleExists, "a sale with this id exists")
		return
	}
	s.Log.Info("sale created", "sale_id", spec.ID, "stock", spec.totalStock(), "shards", max(spec.Shards, 1),
		"variants", len(spec.Variants), "per_user_limit", spec.limit())
	st, _ := s.SaleStatus(r.Context(), spec.ID)
	httpapi.WriteJSON(w, http.StatusCreated, st)
}

// ErrUnknownSale is returned for a sale id Postgres does not know.
var ErrUnknownSale = errors.New("unknown sale")

// WithSaleLock runs fn holding the sale's distributed lock, waiting up to wait for it.
func (s *Sales) WithSaleLock(ctx context.Context, sale string, wait time.Duration, fn func(lock.Held) error) error {
	return lock.With(ctx, s.Locker, lock.SaleKey(sale), wait, fn)
}

func (s *Sales) restorePaused(ctx context.Context, tx pgx.Tx, sale string, k int) error {
	if s.RestorePaused == nil {
		return nil
	}
	return s.RestorePaused(ctx, tx, sale, k)
}

// Preheat loads a sale into Redis under the sale's lock: preheat.lua in "init" mode (a sale
// already selling keeps its stock; only its window is refreshed), adds it to the sales index
// (the relays discover outboxes from it) and broadcasts restock when it has stock. A sale the
// operator paused is written back paused (controls.Controls.RestorePaused).
func (s *Sales) Preheat(ctx context.Context, sale string) (admin.PreheatResult, error) {
	res := admin.PreheatResult{SaleID: sale}
	key := lock.SaleKey(sale)
	err := s.WithSaleLock(ctx, sale, 5*time.Second, func(held lock.Held) error {
		return lock.Fenced(ctx, s.Pool, key, held, func(tx pgx.Tx) error {
			var stock, k, limit int
			var starts, ends time.Time
			var room []byte
			err := tx.QueryRow(ctx, `SELECT stock, starts_at, ends_at, shards, room, per_user_limit FROM sales WHERE id = $1`, sale).
				Scan(&stock, &starts, &ends, &k, &room, &limit)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrUnknownSale
			}
			if err != nil {
				return err
			}
			variants, err := shards.Variants(ctx, tx, sale)
			if err != nil {
				return err
			}
			if k > 1 {
				if err := s.preheatShards(ctx, sale, stock, k, limit, preheatVariants(variants), starts, ends, &res); err != nil {
					return err
				}
				return s.restorePaused(ctx, tx, sale, k)
			}
			if room != nil {
				// The room first, the sale's meta last: preheat.lua writes the sale only when
				// the room is there, and marks it as a room sale, so a room that cannot be set
				// up leaves the sale closed rather than on sale without its room. room_setup.lua
				// keeps the first seed, so a second preheat publishes the same commitment.
				var spec admin.RoomSpec
				if err := json.Unmarshal(room, &spec); err != nil {
					return fmt.Errorf("sale %s: stored room: %w", sale, err)
				}
				rp, err := PreheatRoom(ctx, s.Redis, sale, spec, ends.Add(s.RetentionOrDefault()), int64(stock))
				if err != nil {
					return err
				}
				res.Room = &rp
			}
			dr, err := readDraw(ctx, tx, sale)
			if err != nil {
				return err
			}
			if dr != nil {
				// The draw first, the sale's meta last, as the room: preheat.lua writes a draw
				// sale only when its draw hash holds a seed. The commitment is kept in Postgres
				// in this fenced transaction (the public result reads it there), once: a
				// published commitment is never replaced (entrants saw it and may have saved it),
				// so a draw hash without its seed is refused, not given a new one.
				published := ""
				if dr.commitment != nil {
					published = *dr.commitment
				}
				dp, err := PreheatDraw(ctx, s.Redis, sale, dr.spec, ends.Add(s.RetentionOrDefault()), published)
				if err != nil {
					return err
				}
				res.Draw = &dp
				tag, err := tx.Exec(ctx, `UPDATE draws SET seed_commitment = $2 WHERE sale_id = $1 AND (seed_commitment IS NULL OR seed_commitment = $2)`,
					sale, dp.SeedCommitment)
				if err != nil {
					return err
				}
				if tag.RowsAffected() != 1 {
					return fmt.Errorf("draw %s: Redis holds commitment %s, not the published one: %w", sale, dp.SeedCommitment, lua.ErrSeedLost)
				}
			}
			res.Created, res.StockRedis, err = lua.PreheatCall{Sale: sale, Stock: int64(stock),
				Starts: starts, Ends: ends, Retention: s.RetentionOrDefault(), Namespace: s.Namespace, Limit: limit, Variants: preheatVariants(variants),
				Room: room != nil, Draw: dr != nil}.Run(ctx, s.Redis)
			if err != nil {
				return fmt.Errorf("preheat.lua: %w", err)
			}
			if err := s.Redis.SAdd(ctx, contract.SalesIndexKey, sale).Err(); err != nil {
				return err
			}
			return s.restorePaused(ctx, tx, sale, k)
		})
	})
	return res, err
}

// RetentionOrDefault is how long a sale's Redis keys outlive its end: Retention, or 24h.
func (s *Sales) RetentionOrDefault() time.Duration {
	if s.Retention > 0 {
		return s.Retention
	}
	return 24 * time.Hour
}

// HandlePreheat is POST /admin/sales/{id}/preheat.
func (s *Sales) HandlePreheat(w http.ResponseWriter, r *http.Request) {
	res, err := s.Preheat(r.Context(), r.PathValue("id"))
	s.AnswerLocked(w, "preheat", err, res)
}

// AnswerLocked answers a job run under a sale's lock (preheat, reconcile, rebalance): its
// result, 404 for an unknown sale, 409 busy when another instance holds the lock, 409
// seed_lost for a draw whose published commitment has no seed in Redis.
func (s *Sales) AnswerLocked(w http.ResponseWriter, what string, err error, res any) {
	switch {
	case err == nil:
		httpapi.WriteJSON(w, http.StatusOK, res)
	case errors.Is(err, ErrUnknownSale), errors.Is(err, reconcile.ErrUnknownSale):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	case errors.Is(err, lock.ErrBusy), errors.Is(err, lock.ErrFenced):
		httpapi.Refuse(w, http.StatusConflict, "busy", what+" is running on another instance; retry")
	case errors.Is(err, lua.ErrSeedLost):
		s.Log.Error(what+" refused: the draw's seed is lost", "err", err)
		httpapi.Refuse(w, http.StatusConflict, httpapi.CodeSeedLost, "the seed of the draw's published commitment is not in Redis: a new seed would not open it, so none is drawn (docs/draw.md, \"A lost seed\")")
	default:
		s.Log.Warn(what+" failed", "err", err)
		httpapi.Unavailable(w)
	}
}

// SaleStatus reads a sale from Postgres and Redis. queued counts buyers in Redis whose order
// is not in Postgres yet.
func (s *Sales) SaleStatus(ctx context.Context, sale string) (admin.SaleStatus, error) {
	st := admin.SaleStatus{ID: sale, Orders: map[string]int{"created": 0, "paid": 0, "cancelled": 0, "failed": 0}}
	var paySecs float64
	var room []byte
	err := s.Pool.QueryRow(ctx, `SELECT initial_stock, stock, starts_at, ends_at, EXTRACT(EPOCH FROM pay_within)::float8, shards, room, per_user_limit FROM sales WHERE id = $1`, sale).
		Scan(&st.InitialStock, &st.StockDB, &st.StartsAt, &st.EndsAt, &paySecs, &st.Shards, &room, &st.PerUserLimit)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, ErrUnknownSale
	}
	if err != nil {
		return st, err
	}
	st.PayWithin = (time.Duration(paySecs * float64(time.Second))).String()
	if room != nil {
		st.Room = new(admin.RoomSpec)
		if err := json.Unmarshal(room, st.Room); err != nil {
			return st, fmt.Errorf("sale %s: stored room: %w", sale, err)
		}
		h, err := s.Redis.HGetAll(ctx, contract.RoomKey(sale)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return st, err
		}
		st.SeedCommitment = h["commitment"]
		if len(st.Room.Lanes) > 0 {
			st.Lanes = LaneCounts(h)
		}
	}
	dr, err := readDraw(ctx, s.Pool, sale)
	if err != nil {
		return st, err
	}
	if dr != nil {
		st.Draw = &dr.spec
		if dr.commitment != nil {
			st.SeedCommitment = *dr.commitment
		}
	}
	rows, err := s.Pool.Query(ctx, `SELECT status, count(*) FROM orders WHERE sale_id = $1 GROUP BY status`, sale)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			rows.Close()
			return st, err
		}
		st.Orders[status] = n
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	meta, err := s.Redis.HMGet(ctx, contract.MetaKey(sale), contract.FieldStock, contract.FieldState).Result()
	if err != nil {
		return st, err
	}
	if v, ok := meta[0].(string); ok {
		var n int64
		if _, err := fmt.Sscan(v, &n); err == nil {
			st.StockRedis = &n
		}
	}
	if v, ok := meta[1].(string); ok {
		st.State = v
	}
	if st.Variants, err = shards.Variants(ctx, s.Pool, sale); err != nil {
		return st, err
	}
	if err := shards.FillVariants(ctx, s.Redis, sale, st.Shards, st.Variants); err != nil {
		return st, err
	}
	if len(st.Variants) == 0 {
		st.Variants = nil
	}
	var buyers map[string]string
	if st.Shards > 1 {
		buyers, err = s.shardStatus(ctx, &st)
	} else {
		buyers, err = s.Redis.HGetAll(ctx, contract.BuyersKey(sale)).Result()
	}
	if err != nil {
		return st, err
	}
	st.Buyers = int64(len(buyers))
	if len(buyers) > 0 {
		ids := make([]string, 0, len(buyers))
		for _, o := range buyers {
			ids = append(ids, o)
		}
		err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) AS b(id)
			WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = b.id)`, ids).Scan(&st.Queued)
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// HandleSaleStatus is GET /admin/sales/{id}.
func (s *Sales) HandleSaleStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.SaleStatus(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrUnknownSale):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	case err != nil:
		s.Log.Warn("sale status failed", "err", err)
		httpapi.Unavailable(w)
	default:
		httpapi.WriteJSON(w, http.StatusOK, st)
	}
}
