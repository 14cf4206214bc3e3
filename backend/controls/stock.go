package controls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/shards"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/strictjson"
)

// StockRequest is the body of POST /admin/sales/{id}/stock.
type StockRequest struct {
	// Add is the number of units to add; negative removes unsold units (down to zero, in
	// Redis and in Postgres). Never 0.
	Add int `json:"add"`
	// RequestID names the change: sending it again (a retry after a lost answer) never
	// applies it twice. 1..128 of [A-Za-z0-9._:-].
	RequestID string `json:"request_id"`
	// Variant names the variant whose units change: required on a sale with variants (409
	// variant_sale without it), refused on a sale without (400). Omitted or "": the sale's
	// stock. The sale's totals follow the variant's change, so they stay the variants' sums.
	Variant string `json:"variant,omitempty"`
}

// ChangeStock adds (or removes) units in Redis and Postgres as one journaled, idempotent step
// (table stock_changes, keyed by the request id), under the sale's lock, so it never
// interleaves with preheat, reconcile or rebalance.
//
// The order of the two stores is chosen so that Redis never sells a unit Postgres does not
// have, even if the backend stops between them:
//   - adding: Postgres first (journal row "db", the units, the audit row, one transaction),
//     then Redis (stock.lua, once per request id; it reopens a sold-out sale on every gateway
//     with a restock event). Stopped in between, Redis lacks the units until the request is
//     retried or reconcile runs: both bring Redis to Postgres's count.
//   - removing: journal row "pending", then Redis (stock.lua refuses below zero), then Postgres
//     (guarded by stock >= 0) with the audit row. Stopped in between, Redis has fewer units
//     than Postgres: safe, and the retry finishes the change.
//
// A retried request that finds its change half done completes it. A removal finishes from its
// journal (stock.lua applies once per request id) and then reconciles. An addition runs
// stock.lua itself when it can tell that doing so counts nothing twice (finishAdd: no other
// fenced step of the sale since, the journal row keeps its fencing token); otherwise it
// reconciles, because a reconcile may have repaired Redis in between: reconcile computes Redis
// from Postgres, so the outcome is right whatever happened. (Reconcile cannot attribute units
// in flight to variants, so a variant sale that is selling is better served by the first way.)
//
// A change of one variant (req.Variant) runs the same steps: Postgres moves the variant's row
// in sale_variants and the sale's totals in one transaction (the sale's row first, the order
// the batched writer locks them in), and stock.lua moves the variant's field and the total
// "stock" in one call, so neither store ever shows a total that is not the sum of its
// variants. The journal row records the variant: a request id names one change of one variant.
func (ct *Controls) ChangeStock(ctx context.Context, sale string, req StockRequest) (admin.ControlResult, error) {
	res := admin.ControlResult{Action: "stock", RequestID: req.RequestID}
	key := lock.SaleKey(sale)
	var resumed, reconcileAfter bool
	var refusal error
	err := lock.With(ctx, ct.Locker, lock.SaleKey(sale), 5*time.Second, func(held lock.Held) error {
		before, err := ct.saleSummary(ctx, ct.Pool, sale)
		if err != nil {
			return err
		}
		vbefore, err := ct.stockVariant(ctx, sale, before.Shards, req.Variant)
		if err != nil {
			return err
		}
		var rowSale, rowVariant, status string
		var rowDelta int
		var rowFence *int64
		err = ct.Pool.QueryRow(ctx, `SELECT sale_id, delta, status, variant_id, fence FROM stock_changes WHERE request_id = $1`, req.RequestID).
			Scan(&rowSale, &rowDelta, &status, &rowVariant, &rowFence)
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		mark := func(status string) error {
			return lock.Fenced(ctx, ct.Pool, key, held, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE stock_changes SET status = $2, updated_at = now() WHERE request_id = $1`, req.RequestID, status)
				return err
			})
		}
		if found {
			if rowSale != sale || rowDelta != req.Add || rowVariant != req.Variant {
				return errRequestReused
			}
			switch status {
			case "applied":
				res.Sale, res.Variant, res.Replayed = before, vbefore, true
				return nil
			case "refused":
				return errChangeRefused
			}
			resumed = true
		} else {
			if before.State == admin.SaleEnded {
				return errSaleEnded
			}
			// The sale's initial stock is the largest number the change moves (its stock and a
			// variant's stay at or below it): past admin.MaxStock, refuse before any store changes.
			if req.Add > 0 && before.InitialStock+req.Add > admin.MaxStock {
				return &controlError{http.StatusBadRequest, contract.CodeBadRequest,
					fmt.Sprintf("add %d would take the sale to %d units; a sale holds at most 1e9 (its initial stock is %d)",
						req.Add, before.InitialStock+req.Add, before.InitialStock)}
			}
			if req.Add < 0 && (short(before.StockDB, before.StockRedis, req.Add) ||
				vbefore != nil && short(vbefore.StockDB, vbefore.StockRedis, req.Add)) {
				return ErrInsufficient
			}
		}
		after := before
		after.InitialStock += req.Add
		after.StockDB += req.Add
		if before.StockRedis != nil {
			n := *before.StockRedis + int64(req.Add)
			after.StockRedis = &n
		}
		after.State = stateOf(ct.Now(), after)
		var vafter *admin.VariantStatus
		if vbefore != nil {
			v := *vbefore
			v.InitialStock += req.Add
			v.StockDB += req.Add
			if v.StockRedis != nil {
				n := *v.StockRedis + int64(req.Add)
				v.StockRedis = &n
			}
			vafter = &v
		}
		journal := func(tx pgx.Tx, status string) error {
			_, err := tx.Exec(ctx, `INSERT INTO stock_changes (request_id, sale_id, delta, status, who, variant_id, fence)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, req.RequestID, sale, req.Add, status, who(ctx).Name, req.Variant, held.Token())
			return err
		}
		applyDB := func(tx pgx.Tx) error {
			if err := applyStockDB(ctx, tx, sale, req.Variant, req.Add); err != nil {
				return err
			}
			afterView := stockAuditView(after, vafter)
			afterView["add"] = req.Add
			return writeAudit(ctx, tx, who(ctx), "stock", sale, req.RequestID, stockAuditView(before, vbefore), afterView)
		}

		if req.Add > 0 {
			if resumed {
				done, err := ct.finishAdd(ctx, sale, before.Shards, req, rowFence)
				if err != nil {
					return err
				}
				if done {
					return mark("applied")
				}
				// Postgres has the units; whether Redis has them too only reconcile can say.
				reconcileAfter = true
				return nil
			}
			if err := lock.Fenced(ctx, ct.Pool, key, held, func(tx pgx.Tx) error {
				if err := journal(tx, "db"); err != nil {
					return err
				}
				return applyDB(tx)
			}); err != nil {
				return err
			}
			if err := ct.stopAt("add:postgres"); err != nil {
				return err
			}
			if err := ct.applyStockRedis(ctx, sale, before.Shards, req.RequestID, req.Add, req.Variant); err != nil {
				return err
			}
			return mark("applied")
		}

		if !found {
			if err := lock.Fenced(ctx, ct.Pool, key, held, func(tx pgx.Tx) error { return journal(tx, "pending") }); err != nil {
				return err
			}
			if err := ct.stopAt("remove:journal"); err != nil {
				return err
			}
		}
		err = ct.applyStockRedis(ctx, sale, before.Shards, req.RequestID, req.Add, req.Variant)
		if errors.Is(err, errStockShort) {
			refusal = ErrInsufficient
			return mark("refused")
		}
		if err != nil {
			return err
		}
		if err := ct.stopAt("remove:redis"); err != nil {
			return err
		}
		err = lock.Fenced(ctx, ct.Pool, key, held, func(tx pgx.Tx) error {
			if err := applyDB(tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE stock_changes SET status = 'applied', updated_at = now() WHERE request_id = $1`, req.RequestID)
			return err
		})
		if errors.Is(err, ErrInsufficient) {
			// Postgres disagrees with Redis (orders in flight took the units): Redis was cut
			// already, so reconcile gives them back from Postgres's count.
			refusal, reconcileAfter = ErrInsufficient, true
			return mark("refused")
		}
		reconcileAfter = reconcileAfter || resumed
		return err
	})
	if err != nil {
		return res, err
	}
	if reconcileAfter {
		rep, err := ct.Reconcile(ctx, sale)
		if err != nil {
			return res, fmt.Errorf("reconcile after an interrupted stock change: %w", err)
		}
		res.Reconcile = &rep
		if refusal == nil && req.Add > 0 {
			if err := ct.markStockChange(ctx, req.RequestID, "applied"); err != nil {
				return res, err
			}
		}
	}
	if refusal != nil {
		return res, refusal
	}
	if !res.Replayed {
		ct.Log.Info("sale control", "sale_id", sale, "action", "stock", "add", req.Add, "variant", req.Variant, "who", who(ctx).Name, "request_id", req.RequestID)
		if res.Sale, err = ct.saleSummary(ctx, ct.Pool, sale); err == nil && req.Variant != "" {
			res.Variant, err = ct.stockVariant(ctx, sale, res.Sale.Shards, req.Variant)
		}
	}
	return res, err
}

// finishAdd completes an addition that Postgres has and Redis may lack (its journal row is
// "db", written under the sale lock's fencing token fence), and reports whether it could. It
// runs stock.lua again only when that cannot count the units twice: no shard recorded the
// request id (stock.lua did not run), and no other holder of the sale's lock wrote a fenced
// step since (a reconcile or a preheat, which set Redis from Postgres and so may have given
// Redis the units already). Otherwise only reconcile can tell, and it reports false; when
// every meta hash recorded the request, the change was complete and it reports true.
func (ct *Controls) finishAdd(ctx context.Context, sale string, shards int, req StockRequest, fence *int64) (bool, error) {
	ids := contract.ShardIDs(sale, shards)
	recorded := 0
	for _, id := range ids {
		in, err := ct.Redis.SIsMember(ctx, StockRequestsKey(id), req.RequestID).Result()
		if err != nil {
			return false, err
		}
		if in {
			recorded++
		}
	}
	switch {
	case recorded == len(ids):
		return true, nil
	case recorded > 0 || fence == nil:
		return false, nil
	}
	var seen int64
	if err := ct.Pool.QueryRow(ctx, `SELECT token FROM fences WHERE lock_key = $1`, lock.SaleKey(sale)).Scan(&seen); err != nil {
		return false, err
	}
	if seen != *fence {
		return false, nil
	}
	return true, ct.applyStockRedis(ctx, sale, shards, req.RequestID, req.Add, req.Variant)
}

// stopAt asks Stop (tests only) at each point of a stock change between its two stores; an
// error stops the change there, as a backend that stopped would.
func (ct *Controls) stopAt(step string) error {
	if ct.Stop == nil {
		return nil
	}
	return ct.Stop(step)
}

// short reports whether removing -add units would take a stock below zero (in Postgres, or in
// Redis when the sale is there).
func short(db int, redis *int64, add int) bool {
	return db+add < 0 || redis != nil && *redis+int64(add) < 0
}

// stockVariant checks a stock change's variant against the sale's variants and reads that
// variant in both stores; nil for a change of a sale without variants.
func (ct *Controls) stockVariant(ctx context.Context, sale string, k int, variant string) (*admin.VariantStatus, error) {
	vs, err := shards.Variants(ctx, ct.Pool, sale)
	switch {
	case err != nil:
		return nil, err
	case len(vs) == 0 && variant == "":
		return nil, nil
	case len(vs) == 0:
		return nil, errNotVariantSale
	case variant == "":
		return nil, errVariantStock
	}
	for _, v := range vs {
		if v.ID == variant {
			one := []admin.VariantStatus{v}
			if err := shards.FillVariants(ctx, ct.Redis, sale, k, one); err != nil {
				return nil, err
			}
			return &one[0], nil
		}
	}
	return nil, errUnknownVariant
}

// applyStockDB is a stock change's Postgres side: the sale's stock and initial stock, and with
// a variant the variant's too, each guarded by stock >= 0 (ErrInsufficient otherwise; the
// caller's transaction then rolls back). The sale's row is updated first: the batched writer
// locks a sale's row before its variants' rows, so the two never deadlock.
func applyStockDB(ctx context.Context, tx pgx.Tx, sale, variant string, add int) error {
	tag, err := tx.Exec(ctx, `UPDATE sales SET stock = stock + $2, initial_stock = initial_stock + $2
		WHERE id = $1 AND stock + $2 >= 0`, sale, add)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrInsufficient
	}
	if variant == "" {
		return nil
	}
	tag, err = tx.Exec(ctx, `UPDATE sale_variants SET stock = stock + $3, initial_stock = initial_stock + $3
		WHERE sale_id = $1 AND variant_id = $2 AND stock + $3 >= 0`, sale, variant, add)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrInsufficient
	}
	return nil
}

// stockAuditView is a stock change's side of the audit trail: the sale's numbers, or for a
// change of one variant the variant's, with the sale's totals beside them (sale_*).
func stockAuditView(sum admin.SaleSummary, v *admin.VariantStatus) map[string]any {
	m := auditView("stock", sum)
	if v != nil {
		m["sale_initial_stock"], m["sale_stock_db"], m["sale_stock_redis"] = m["initial_stock"], m["stock_db"], m["stock_redis"]
		m["variant"], m["initial_stock"], m["stock_db"], m["stock_redis"] = v.ID, v.InitialStock, v.StockDB, v.StockRedis
	}
	return m
}

// markStockChange sets a journal row's status outside the sale's lock (after reconcile).
func (ct *Controls) markStockChange(ctx context.Context, req, status string) error {
	_, err := ct.Pool.Exec(ctx, `UPDATE stock_changes SET status = $2, updated_at = now() WHERE request_id = $1`, req, status)
	return err
}

// ParseStockRequest decodes and checks the body of POST /admin/sales/{id}/stock.
func ParseStockRequest(r io.Reader) (StockRequest, error) {
	var req StockRequest
	// Strict as ParseSaleSpec: {"add":1,"add":1000} is refused, not read as 1000.
	if err := strictjson.Decode(r, &req); err != nil {
		return req, fmt.Errorf("body must be JSON {\"add\": N, \"request_id\": \"...\", \"variant\": \"<id>\" (optional)}: %w", err)
	}
	switch {
	case req.Add == 0 || req.Add > admin.MaxStock || req.Add < -admin.MaxStock:
		return req, errors.New("add must be a non-zero integer within ±1e9")
	case !requestIDPattern.MatchString(req.RequestID):
		return req, errors.New("request_id is required: 1..128 of [A-Za-z0-9._:-]")
	case req.Variant != "" && !contract.ValidVariantID(req.Variant):
		return req, errors.New("variant must match ^[A-Za-z0-9_-]{1,64}$")
	}
	return req, nil
}

// handleStock serves POST /admin/sales/{id}/stock {"add": N, "request_id": "...", "variant": "<id>"}.
func (ct *Controls) HandleStock(w http.ResponseWriter, r *http.Request) {
	req, err := ParseStockRequest(http.MaxBytesReader(w, r.Body, 1<<12))
	if err != nil {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, err.Error())
		return
	}
	res, err := ct.ChangeStock(r.Context(), r.PathValue("id"), req)
	if httpapi.RefuseBadValue(w, err, "add") {
		ct.Log.Warn("stock change: Postgres refused a value of the request", "err", err)
		return
	}
	ct.answerControl(w, "stock change", err, res)
}
