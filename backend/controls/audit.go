package controls

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// writeAudit records a control in tx, the transaction that makes its Postgres side, so a
// change is never without its row nor a row without its change.
func writeAudit(ctx context.Context, tx pgx.Tx, who httpapi.Principal, action, sale, requestID string, before, after any) error {
	b, err := json.Marshal(before)
	if err != nil {
		return err
	}
	a, err := json.Marshal(after)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO audit_log (who, role, action, sale_id, before, after, request_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, who.Name, string(who.Role), action, sale, b, a, requestID)
	return err
}

// Audit lists the newest entries first, of one sale or (sale "") of all, at most limit.
func (ct *Controls) Audit(ctx context.Context, sale string, limit int) ([]admin.AuditEntry, error) {
	rows, err := ct.Pool.Query(ctx, `SELECT id, at, who, role, action, sale_id, before, after, request_id
		FROM audit_log WHERE $1 = '' OR sale_id = $1 ORDER BY id DESC LIMIT $2`, sale, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (admin.AuditEntry, error) {
		var e admin.AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Who, &e.Role, &e.Action, &e.SaleID, &e.Before, &e.After, &e.RequestID)
		return e, err
	})
}

// handleAudit serves GET /admin/audit?sale=<id>&limit=<n> (default 100, at most 1000).
func (ct *Controls) HandleAudit(w http.ResponseWriter, r *http.Request) {
	sale := r.URL.Query().Get("sale")
	if sale != "" && !contract.ValidID(sale) {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "sale must match ^[A-Za-z0-9_-]{1,64}$")
		return
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, ok := httpapi.ParseLimit(v, 1000)
		if !ok {
			httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "limit must be 1..1000")
			return
		}
		limit = n
	}
	entries, err := ct.Audit(r.Context(), sale, limit)
	if err != nil {
		ct.Log.Warn("audit read failed", "err", err)
		httpapi.Unavailable(w)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"entries": entries})
}
