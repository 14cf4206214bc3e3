//go:build integration

package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/controls"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// controlServer serves e.svc's API with an admin named alice and a viewer named vera.
func (e *env) controlServer() *httptest.Server {
	e.t.Helper()
	toks, err := ParseTokens("alice:"+aliceToken+":admin,vera:"+viewerToken+":viewer", "")
	if err != nil {
		e.t.Fatal(err)
	}
	e.rebuild(func(o *Options) { o.Tokens = toks })
	srv := httptest.NewServer(e.svc.Handler(NewMetricsRegistry(), false))
	e.t.Cleanup(srv.Close)
	return srv
}

// call sends an admin request with token and decodes the answer into out.
func call(t testing.TB, srv *httptest.Server, method, path, token, body string, out any) int {
	t.Helper()
	return doJSON(t, method, srv.URL+path, map[string]string{"Authorization": "Bearer " + token}, body, out)
}

// subscribe listens on the events channel; the subscription is confirmed when it returns.
func subscribe(t testing.TB, rdb *redis.Client) <-chan *redis.Message {
	t.Helper()
	ps := rdb.Subscribe(context.Background(), contract.EventsChannel)
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps.Channel()
}

// await waits for event payload on ch.
func await(t testing.TB, ch <-chan *redis.Message, payload string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m := <-ch:
			if m.Payload == payload {
				return
			}
		case <-timeout:
			t.Fatalf("no event %q within 5s", payload)
		}
	}
}

func (e *env) audit(sale string) []admin.AuditEntry {
	e.t.Helper()
	entries, err := e.svc.Controls.Audit(context.Background(), sale, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

func TestPauseReachesEveryShardsMetaIsBroadcastAndAuditedWithWho(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv := e.controlServer()
	sale := e.shardedSale(12, 3)
	events := subscribe(t, e.rdb)

	var res admin.ControlResult
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/pause", aliceToken, "", &res); code != 200 || res.Sale.State != admin.SalePaused {
		t.Fatalf("pause: %d %+v", code, res)
	}
	await(t, events, "paused:"+sale)
	for _, id := range append([]string{sale}, contract.ShardIDs(sale, 3)...) {
		if st := e.rdb.HGet(ctx, contract.MetaKey(id), contract.FieldState).Val(); st != "paused" {
			t.Fatalf("meta of %s: state %q, want paused", id, st)
		}
	}
	var ref contract.Refusal
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/pause", aliceToken, "", &ref); code != 409 || ref.Code != "already_paused" {
		t.Fatalf("second pause: %d %+v", code, ref)
	}
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/resume", viewerToken, "", &ref); code != 403 || ref.Code != httpapi.CodeForbidden {
		t.Fatalf("viewer resumes: %d %+v", code, ref)
	}
	if code := call(t, srv, "POST", "/admin/sales/nosuch-"+sale+"/pause", aliceToken, "", &ref); code != 404 || ref.Code != contract.CodeUnknownSale {
		t.Fatalf("unknown sale: %d %+v", code, ref)
	}
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/resume", aliceToken, "", &res); code != 200 || res.Sale.State != admin.SaleOpen {
		t.Fatalf("resume: %d %+v", code, res)
	}
	await(t, events, "resumed:"+sale)
	for _, id := range append([]string{sale}, contract.ShardIDs(sale, 3)...) {
		if st := e.rdb.HGet(ctx, contract.MetaKey(id), contract.FieldState).Val(); st != "open" {
			t.Fatalf("meta of %s after resume: state %q", id, st)
		}
	}
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/resume", aliceToken, "", &ref); code != 409 || ref.Code != "not_paused" {
		t.Fatalf("second resume: %d %+v", code, ref)
	}
	var trail struct{ Entries []admin.AuditEntry }
	if code := call(t, srv, "GET", "/admin/audit?sale="+sale, viewerToken, "", &trail); code != 200 || len(trail.Entries) != 2 {
		t.Fatalf("audit: %d %+v", code, trail)
	}
	last, first := trail.Entries[0], trail.Entries[1]
	if first.Action != "pause" || last.Action != "resume" || first.Who != "alice" || first.Role != "admin" ||
		!strings.Contains(string(first.Before), `"state":"open"`) || !strings.Contains(string(first.After), `"state":"paused"`) || first.RequestID == "" {
		t.Fatalf("audit rows: %+v / %+v", first, last)
	}
}

func TestAPausedSaleIsPausedAgainWhenRedisLosesItAndPreheatReloadsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sale := e.sale(5)
	if _, err := e.svc.Controls.SetPaused(withWho(ctx), sale, true, "r1"); err != nil {
		t.Fatal(err)
	}
	e.rdb.Del(ctx, contract.MetaKey(sale))
	if _, err := e.svc.Sales.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	meta := e.rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	if meta[contract.FieldState] != "paused" || meta[contract.FieldStock] != "5" {
		t.Fatalf("meta after preheat of a paused sale: %v", meta)
	}
}

func withWho(ctx context.Context) context.Context {
	return httpapi.WithPrincipal(ctx, httpapi.Principal{Name: "test", Role: httpapi.RoleAdmin})
}

func TestEndingNowEndsTheSaleInBothStoresAndAnEndedSaleRefusesEveryControl(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv := e.controlServer()
	sale := e.shardedSale(6, 2)
	// Gateways that remember the window hear that it moved.
	events := e.rdb.Subscribe(ctx, contract.EventsChannel)
	defer events.Close()
	if _, err := events.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var res admin.ControlResult
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/end", aliceToken, "", &res); code != 200 || res.Sale.State != admin.SaleEnded {
		t.Fatalf("end: %d %+v", code, res)
	}
	for want := contract.EventWindow + ":" + sale; ; {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		msg, err := events.ReceiveMessage(wctx)
		cancel()
		if err != nil {
			t.Fatalf("no %q event after ending the sale: %v", want, err)
		}
		if msg.Payload == want {
			break
		}
	}
	var ends time.Time
	if err := e.pool.QueryRow(ctx, `SELECT ends_at FROM sales WHERE id = $1`, sale).Scan(&ends); err != nil {
		t.Fatal(err)
	}
	if time.Since(ends) > 5*time.Second || time.Since(ends) < 0 {
		t.Fatalf("ends_at %v is not now", ends)
	}
	for _, id := range append([]string{sale}, contract.ShardIDs(sale, 2)...) {
		ms, _ := e.rdb.HGet(ctx, contract.MetaKey(id), contract.FieldEndsMS).Int64()
		if ms != ends.UnixMilli() {
			t.Fatalf("%s ends_ms %d, Postgres %d", id, ms, ends.UnixMilli())
		}
		if exp := e.rdb.PExpireTime(ctx, contract.MetaKey(id)).Val(); exp.Milliseconds() != ends.UnixMilli()+e.svc.Sales.RetentionOrDefault().Milliseconds() {
			t.Fatalf("%s expires at %v, want end + retention", id, exp)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/pause", ""}, {"POST", "/end", ""}, {"POST", "/stock", `{"add":1,"request_id":"x1"}`},
		{"PATCH", "", `{"ends_at":"` + time.Now().Add(time.Hour).Format(time.RFC3339) + `"}`},
	} {
		var ref contract.Refusal
		if code := call(t, srv, c.method, "/admin/sales/"+sale+c.path, aliceToken, c.body, &ref); code != 409 || ref.Code != "sale_ended" {
			t.Errorf("%s %s on an ended sale: %d %+v", c.method, c.path, code, ref)
		}
	}
	if n := len(e.audit(sale)); n != 1 {
		t.Fatalf("%d audit rows, want 1 (refusals change nothing)", n)
	}
}

func TestEndingASaleBeforeItStartsMeansItNeverOpens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	if _, err := e.svc.Sales.CreateSale(ctx, SaleSpec{ID: sale, Stock: 3, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Controls.MoveEnd(withWho(ctx), sale, time.Time{}, true, "r")
	if err != nil || res.Sale.State != admin.SaleEnded || !res.Sale.StartsAt.Before(res.Sale.EndsAt) || res.Sale.EndsAt.After(time.Now()) {
		t.Fatalf("end of a scheduled sale: %v %+v", err, res.Sale)
	}
}

func TestMovingTheEndChecksItAndWritesBothStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv := e.controlServer()
	sale := e.sale(4)
	for _, body := range []string{`{}`, `{"ends_at":"soon"}`, `{"ends_at":"2001-01-01T00:00:00Z"}`, `{"ends_at":"2999-01-01T00:00:00Z","stock":3}`} {
		var ref contract.Refusal
		if code := call(t, srv, "PATCH", "/admin/sales/"+sale, aliceToken, body, &ref); code != 400 || ref.Code != contract.CodeBadRequest {
			t.Errorf("PATCH %s: %d %+v", body, code, ref)
		}
	}
	want := time.Now().Add(3 * time.Hour).Truncate(time.Second).UTC()
	var res admin.ControlResult
	if code := call(t, srv, "PATCH", "/admin/sales/"+sale, aliceToken, `{"ends_at":"`+want.Format(time.RFC3339)+`"}`, &res); code != 200 || !res.Sale.EndsAt.Equal(want) {
		t.Fatalf("PATCH: %d %+v", code, res)
	}
	if ms, _ := e.rdb.HGet(ctx, contract.MetaKey(sale), contract.FieldEndsMS).Int64(); ms != want.UnixMilli() {
		t.Fatalf("Redis ends_ms %d, want %d", ms, want.UnixMilli())
	}
	if e := e.audit(sale); len(e) != 1 || e[0].Action != "move_end" {
		t.Fatalf("audit %+v", e)
	}
}

// Eight operators (or one retrying client) send the same stock change at once: it is applied
// once, in both stores, and the sold-out sale reopens on every gateway (restock event).
func TestAStockChangeIsAppliedOncePerRequestIDAndReopensASoldOutSale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv := e.controlServer()
	sale := e.sale(2)
	e.accept(sale, 2)
	events := subscribe(t, e.rdb)
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = call(t, srv, "POST", "/admin/sales/"+sale+"/stock", aliceToken, `{"add":3,"request_id":"more-1"}`, nil)
		}()
	}
	wg.Wait()
	for _, c := range codes {
		if c != 200 && c != 409 { // 409 busy: the lock was held past the wait
			t.Fatalf("answers %v", codes)
		}
	}
	await(t, events, "restock:"+sale)
	if r := e.redisStock(sale); r != 3 {
		t.Fatalf("Redis stock %d, want 0 + 3", r)
	}
	if db, init := e.dbInt(`SELECT stock FROM sales WHERE id = $1`, sale), e.dbInt(`SELECT initial_stock FROM sales WHERE id = $1`, sale); db != 5 || init != 5 {
		t.Fatalf("Postgres stock %d initial %d, want 5 and 5 (no order written yet)", db, init)
	}
	var res admin.ControlResult
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/stock", aliceToken, `{"add":3,"request_id":"more-1"}`, &res); code != 200 || !res.Replayed {
		t.Fatalf("replay: %d %+v", code, res)
	}
	var ref contract.Refusal
	if code := call(t, srv, "POST", "/admin/sales/"+sale+"/stock", aliceToken, `{"add":4,"request_id":"more-1"}`, &ref); code != 409 || ref.Code != "request_id_reused" {
		t.Fatalf("reused id: %d %+v", code, ref)
	}
	for _, body := range []string{`{"add":0,"request_id":"z"}`, `{"add":1}`, `{"add":1,"request_id":"bad id"}`, `{"add":"1","request_id":"z"}`} {
		if code := call(t, srv, "POST", "/admin/sales/"+sale+"/stock", aliceToken, body, &ref); code != 400 {
			t.Errorf("%s: %d", body, code)
		}
	}
	if n := len(e.audit(sale)); n != 1 {
		t.Fatalf("%d audit rows, want 1", n)
	}
	rep, err := e.svc.Reconciler.Reconcile(ctx, sale)
	if err != nil || rep.StockDelta != 0 {
		t.Fatalf("reconcile after the change: %v %+v (Redis and Postgres must agree)", err, rep)
	}
}

func TestRemovingStockStopsAtZeroInBothStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := withWho(context.Background())
	sale := e.sale(5)
	e.accept(sale, 3) // 2 unsold in Redis; Postgres still counts 5 (orders in flight)
	if _, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -3, RequestID: "cut-1"}); err != controls.ErrInsufficient {
		t.Fatalf("removing 3 of 2 unsold: %v", err)
	}
	if r, db := e.redisStock(sale), e.dbInt(`SELECT stock FROM sales WHERE id = $1`, sale); r != 2 || db != 5 {
		t.Fatalf("a refused removal changed stock: Redis %d Postgres %d", r, db)
	}
	res, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -2, RequestID: "cut-2"})
	if err != nil || res.Sale.State != admin.SaleSoldOut {
		t.Fatalf("removing 2 of 2: %v %+v", err, res.Sale)
	}
	if r, db, init := e.redisStock(sale), e.dbInt(`SELECT stock FROM sales WHERE id = $1`, sale), e.dbInt(`SELECT initial_stock FROM sales WHERE id = $1`, sale); r != 0 || db != 3 || init != 3 {
		t.Fatalf("after removing 2: Redis %d Postgres %d initial %d", r, db, init)
	}
}

// The backend stopped after committing an addition to Postgres and before Redis; a reconcile
// then ran (and gave Redis the units). The client's retry must complete the change without
// adding the units a second time.
func TestAnInterruptedStockAddIsCompletedByItsRetryWithoutCountingTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := withWho(context.Background())
	sale := e.sale(4)
	for _, q := range []string{`INSERT INTO stock_changes (request_id, sale_id, delta, status, who) VALUES ('half', $1, 6, 'db', 'test')`,
		`UPDATE sales SET stock = stock + 6, initial_stock = initial_stock + 6 WHERE id = $1`} {
		if _, err := e.pool.Exec(ctx, q, sale); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.svc.Reconciler.Reconcile(ctx, sale); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: 6, RequestID: "half"})
	if err != nil || res.Reconcile == nil {
		t.Fatalf("retry: %v %+v", err, res)
	}
	if r := e.redisStock(sale); r != 10 {
		t.Fatalf("Redis stock %d, want 4 + 6 once", r)
	}
	if st := e.dbInt(`SELECT count(*) FROM stock_changes WHERE request_id = 'half' AND status = 'applied'`); st != 1 {
		t.Fatal("the journal row is not applied")
	}
}

func TestStockAddedToAShardedSaleIsSpreadOverItsShards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := withWho(context.Background())
	sale := e.shardedSale(4, 4)
	events := subscribe(t, e.rdb)
	if _, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: 8, RequestID: "s8"}); err != nil {
		t.Fatal(err)
	}
	await(t, events, "restock:"+sale)
	stocks, err := shardStocks(ctx, e.rdb, contract.ShardIDs(sale, 4))
	if err != nil || fmt.Sprint(stocks) != "[3 3 3 3]" {
		t.Fatalf("shard stocks %v %v, want 3 each", stocks, err)
	}
	if _, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -13, RequestID: "s-13"}); err != controls.ErrInsufficient {
		t.Fatalf("removing 13 of 12: %v", err)
	}
	if _, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: -12, RequestID: "s-12"}); err != nil {
		t.Fatal(err)
	}
	if stocks, _ := shardStocks(ctx, e.rdb, contract.ShardIDs(sale, 4)); fmt.Sprint(stocks) != "[0 0 0 0]" {
		t.Fatalf("shard stocks after removing all: %v", stocks)
	}
}

func TestSalesListShowsEachSalesState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := withWho(context.Background())
	srv := e.controlServer()
	open, paused, sold := e.sale(3), e.sale(3), e.sale(1)
	e.accept(sold, 1)
	if _, err := e.svc.Controls.SetPaused(ctx, paused, true, "p"); err != nil {
		t.Fatal(err)
	}
	var list struct{ Sales []admin.SaleSummary }
	if code := call(t, srv, "GET", "/admin/sales", viewerToken, "", &list); code != 200 {
		t.Fatalf("list: %d", code)
	}
	got := map[string]string{}
	for _, s := range list.Sales {
		got[s.ID] = s.State
	}
	if got[open] != admin.SaleOpen || got[paused] != admin.SalePaused || got[sold] != admin.SaleSoldOut {
		t.Fatalf("states %v", got)
	}
	if code := call(t, srv, "GET", "/admin/sales", "", "", nil); code != 401 {
		t.Fatalf("without a token: %d", code)
	}
}

// Stock changes, reconciles and buyers at once on one sale: the changes and reconciles take
// turns under the sale's lock while the buyers (the gate's writes) do not wait; at the end
// both stores count every added unit exactly once.
func TestStockChangesInterleavedWithReconcilesAndBuyersKeepTheStoresInAgreement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := withWho(context.Background())
	sale := e.sale(50)
	retry := func(what string, fn func() error) {
		for {
			err := fn()
			if err == nil {
				return
			}
			if !errors.Is(err, lock.ErrBusy) {
				t.Errorf("%s: %v", what, err)
				return
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < 10; i++ {
			retry("stock", func() error {
				_, err := e.svc.Controls.ChangeStock(ctx, sale, controls.StockRequest{Add: 2, RequestID: fmt.Sprintf("mix-%d", i)})
				return err
			})
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ {
			retry("reconcile", func() error { _, err := e.svc.Reconciler.Reconcile(ctx, sale); return err })
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 30; i++ {
			e.accept(sale, 1)
		}
	}()
	wg.Wait()
	if db, init := e.dbInt(`SELECT stock FROM sales WHERE id = $1`, sale), e.dbInt(`SELECT initial_stock FROM sales WHERE id = $1`, sale); db != 70 || init != 70 {
		t.Fatalf("Postgres stock %d initial %d, want 50 + 10×2 = 70 (no order written yet)", db, init)
	}
	if r := e.redisStock(sale); r != 40 {
		t.Fatalf("Redis stock %d, want 70 - 30 buyers = 40", r)
	}
	if rep, err := e.svc.Reconciler.Reconcile(ctx, sale); err != nil || rep.StockDelta != 0 {
		t.Fatalf("final reconcile: %v %+v", err, rep)
	}
}
