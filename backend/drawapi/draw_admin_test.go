//go:build integration

package drawapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/testenv"
)

func TestDrawAdminRoutesRunTheDrawAuditedAndShowIt(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	_, srv := e.Servers(false)
	ctx := context.Background()
	id := testenv.ID("d")
	now := time.Now().UTC().Truncate(time.Second)
	viewer := map[string]string{"Authorization": "Bearer " + servicetest.TestViewerToken}
	body := fmt.Sprintf(`{"id":%q,"starts_at":%q,"ends_at":%q,"variants":[{"id":"a","stock":2},{"id":"b","stock":1}],
		"draw":{"opens_at":%q,"closes_at":%q,"claim_within":"5m"}}`, id, now.Add(time.Hour).Format(time.RFC3339),
		now.Add(2*time.Hour).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	t.Cleanup(func() {
		e.Redis.Del(context.Background(), contract.MetaKey(id), contract.DrawKey(id), contract.DrawEntriesKey(id))
		e.Redis.SRem(context.Background(), contract.SalesIndexKey, id)
	})
	var st admin.SaleStatus
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales", servicetest.AdminAuth, body, &st); code != http.StatusCreated || st.Draw == nil {
		t.Fatalf("create: %d %+v", code, st.Draw)
	}
	var ref contract.Refusal
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+id+"/draw", servicetest.AdminAuth, "", &ref); code != http.StatusConflict || ref.Code != "not_preheated" {
		t.Fatalf("draw before the preheat: %d %+v", code, ref)
	}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+id+"/preheat", servicetest.AdminAuth, "", nil); code != http.StatusOK {
		t.Fatalf("preheat: %d", code)
	}
	for i := 0; i < 10; i++ {
		v := []string{"a", "b"}[i%2]
		e.Redis.HSet(ctx, contract.DrawEntriesKey(id), fmt.Sprintf("u%d", i), fmt.Sprintf(drawmath.EntryIDFormat+":%s", i+1, v))
		e.Redis.HIncrBy(ctx, contract.DrawKey(id), "n:"+v, 1)
	}
	var ds admin.DrawStatus
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+id+"/draw", viewer, "", &ds); code != http.StatusOK || ds.State != "open" ||
		ds.Entries != 10 || ds.EntriesByVariant["a"] != 5 || len(ds.SeedCommitment) != 64 {
		t.Fatalf("status before the draw: %d %+v", code, ds)
	}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+id+"/draw", viewer, "", nil); code != http.StatusForbidden {
		t.Fatalf("a viewer ran the draw: %d", code)
	}
	headers := map[string]string{"Authorization": servicetest.AdminAuth["Authorization"], "X-Request-ID": "draw-now-1"}
	if code := servicetest.DoJSON(t, "POST", srv.URL+"/admin/sales/"+id+"/draw", headers, "", &ds); code != http.StatusOK || ds.State != "drawn" ||
		ds.Entries != 10 || ds.Root == "" || len(ds.Waves) != 2 || ds.Waves[0].Hi != 2 || ds.Waves[1].Hi != 1 {
		t.Fatalf("draw now: %d %+v", code, ds)
	}
	if n := e.DBInt(`SELECT count(*) FROM audit_log WHERE sale_id = $1 AND action = 'draw' AND request_id = 'draw-now-1' AND who = 'admin'
		AND before->>'state' = 'open' AND after->>'state' = 'drawn'`, id); n != 1 {
		t.Fatalf("%d audit rows for the draw", n)
	}
	plain := e.Sale(3)
	if code := servicetest.DoJSON(t, "GET", srv.URL+"/admin/sales/"+plain+"/draw", viewer, "", &ref); code != http.StatusNotFound {
		t.Fatalf("draw status of a sale that is no draw: %d", code)
	}
}
