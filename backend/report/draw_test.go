//go:build integration

package report_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/draw"
	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/report"
	"github.com/seckilledge/seckill/backend/sales"
	"github.com/seckilledge/seckill/caddymodule/reportpage"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	drawmath "github.com/seckilledge/seckill/contract/draw"
	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A draw sale run to its end by the draw's own job over real Redis and Postgres (sizes m: 2
// units, l: 1; 12 entries): wave 1 of m has one buyer and one who lets his win lapse, so wave 2
// gives the lapsed unit to m's next rank, who lets it lapse too; l's winner pays. Its report is
// published, served with its evidence and key, passes the offline check with the draw's figures
// (entries per size, winners per wave, claimed, expired) and its check, and FAILs it once a
// wave's winner is swapped for a worse rank and the whole report re-signed with the real key.
func TestAnEndedDrawSaleGetsASignedReportWhoseWavesTheOfflineCheckRedoes(t *testing.T) {
	ctx := context.Background()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	locker := lock.NewLocker(rdb, 10*time.Second)
	log := slog.New(slog.DiscardHandler)
	sl := &sales.Sales{Pool: pool, Redis: rdb, Locker: locker, Log: log}
	runner := &draw.Runner{Pool: pool, Redis: rdb, Locker: locker, Log: log}
	sale := testenv.ID("drep")
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.DrawKey(sale), contract.DrawEntriesKey(sale), contract.BuyersKey(sale))
		rdb.SRem(context.Background(), contract.SalesIndexKey, sale)
	})
	closes := time.Now().Add(1500 * time.Millisecond)
	spec := sales.SaleSpec{ID: sale, StartsAt: closes, EndsAt: closes.Add(time.Hour),
		Variants: []sales.VariantSpec{{ID: "l", Stock: 1}, {ID: "m", Stock: 2}},
		Draw:     &admin.DrawSpec{OpensAt: closes.Add(-time.Hour), ClosesAt: closes, ClaimWithin: admin.Duration("1s")}}
	if created, err := sl.CreateSale(ctx, spec); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if _, err := sl.Preheat(ctx, sale); err != nil {
		t.Fatal(err)
	}
	// The edge's entries, in docs/draw.md's format.
	users := map[string]string{}
	var live []drawmath.Entry
	counts := map[string]int{}
	for i := range 12 {
		id, v, user := fmt.Sprintf(drawmath.EntryIDFormat, i+1), []string{"m", "l", "m"}[i%3], fmt.Sprintf("u%02d", i)
		rdb.HSet(ctx, contract.DrawEntriesKey(sale), user, id+":"+v)
		users[id] = user
		live = append(live, drawmath.Entry{ID: id, Variant: v})
		counts[v]++
	}
	for v, n := range counts {
		rdb.HSet(ctx, contract.DrawKey(sale), "n:"+v, n)
	}
	rdb.HSet(ctx, contract.DrawKey(sale), "seq", 12)
	time.Sleep(time.Until(closes) + 50*time.Millisecond)
	if _, err := runner.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	var seedHex string
	if err := pool.QueryRow(ctx, `SELECT seed FROM draws WHERE sale_id = $1`, sale).Scan(&seedHex); err != nil {
		t.Fatal(err)
	}
	seed, err := hex.DecodeString(seedHex)
	if err != nil {
		t.Fatal(err)
	}
	ranking := drawmath.RankVariants(seed, live)
	// m's second winner buys (the gate took his unit; his order is in Postgres); l's pays; m's
	// first winner's order is cancelled unpaid (his unit is back).
	buy := func(entry, variant, status, reason string) {
		t.Helper()
		if status == "created" || status == "paid" {
			rdb.HIncrBy(ctx, contract.MetaKey(sale), "v:"+variant, -1)
			rdb.HIncrBy(ctx, contract.MetaKey(sale), "stock", -1)
			rdb.HSet(ctx, contract.BuyersKey(sale), users[entry], "o-"+entry)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, reason, accepted_at, variant_id) VALUES ($1, $2, $3, $4, nullif($5, ''), now(), $6)`,
			backendtest.OrderIDAt(t, time.Now()), sale, users[entry], status, reason, variant); err != nil {
			t.Fatal(err)
		}
	}
	buy(ranking["m"][1].ID, "m", "created", "")
	buy(ranking["l"][0].ID, "l", "paid", "")
	buy(ranking["m"][0].ID, "m", "cancelled", "unpaid")
	waitWave := func() {
		t.Helper()
		var until time.Time
		if err := pool.QueryRow(ctx, `SELECT max(claim_until) FROM draw_waves WHERE sale_id = $1`, sale).Scan(&until); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(until) + 50*time.Millisecond)
		if _, err := runner.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitWave() // wave 2 of m: the unit m's first winner let go, to m's rank 3
	rdb.HSet(ctx, contract.MetaKey(sale), "ends_ms", time.Now().UnixMilli())
	waitWave() // nobody buys: every size is done
	var state string
	if err := pool.QueryRow(ctx, `SELECT state FROM draws WHERE sale_id = $1`, sale).Scan(&state); err != nil || state != draw.StateDone {
		t.Fatalf("draw state %q %v, want done", state, err)
	}

	key, err := report.ParseKey("demo")
	if err != nil {
		t.Fatal(err)
	}
	p := &report.Publisher{Pool: pool, Redis: rdb, Key: key, Page: reportpage.Must().Serve, Now: func() time.Time { return spec.EndsAt.Add(time.Minute) }}
	if ok, err := p.Publish(ctx, sale); err != nil || !ok {
		t.Fatalf("publish: %v %v", ok, err)
	}
	mux := http.NewServeMux()
	p.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path, accept string) []byte { return getOK(t, srv.URL+path, accept) }
	keys := get("/.well-known/seckill-report-keys", "application/json")
	signed := get("/seckill/"+sale+"/report", "application/json")
	evidence := get("/seckill/"+sale+"/report/evidence", "text/plain")
	problems, passes := report.Verify(keys, signed, evidence)
	if len(problems) > 0 {
		t.Fatalf("the published report FAILs: %v (passes %v)\n%s", problems, passes, evidence)
	}
	var s rep.Signed
	_ = json.Unmarshal(signed, &s)
	var r rep.Report
	if err := json.Unmarshal(s.Report, &r); err != nil {
		t.Fatal(err)
	}
	d := r.Draw
	if r.Mode != "draw" || r.Version != rep.Version || r.Checks.Draw == nil || r.Checks.Draw.Result != rep.Pass || r.Checks.Beacon.Result != rep.NotApplicable ||
		d == nil || d.Entries != 12 || d.Winners != 4 || d.Claimed != 2 || d.Expired != 2 || len(d.Waves) != 3 ||
		d.Variants["m"] != (rep.DrawVariant{Entries: 8, Winners: 3, Claimed: 1, Expired: 2, Bought: 1}) ||
		d.Variants["l"] != (rep.DrawVariant{Entries: 4, Winners: 1, Claimed: 1, Expired: 0, Bought: 1}) ||
		r.Figures.Bought != 2 || r.Figures.Refused["cancelled:unpaid"] != 1 || r.Evidence.EntriesRoot == "" {
		t.Fatalf("report %s", s.Report)
	}
	if strings.Contains(string(evidence), "u0") {
		t.Fatalf("the evidence names a user:\n%s", evidence)
	}
	// m's wave 2 made rank 3 (position 2) the winner; the forger gives it to rank 4 instead,
	// recomputes every figure and signs with the real key: the ranks betray him.
	third, fourth := ranking["m"][2].ID, ranking["m"][3].ID
	forged := bytes.Replace(evidence, []byte(":"+third+"\n"), []byte(":"+fourth+"\n"), 1)
	if bytes.Equal(forged, evidence) {
		t.Fatal("the wave's winner was not swapped")
	}
	f := r
	rep.Compute(forged, r.Figures.Units).Apply(&f)
	dg := rep.Digest(forged)
	f.Evidence.SHA256, f.Evidence.Lines, f.Evidence.Bytes = dg.SHA256, dg.Lines, dg.Bytes
	fs, err := rep.Sign(&f, key.Private)
	if err != nil {
		t.Fatal(err)
	}
	fsRaw, _ := json.Marshal(fs)
	if problems, _ := report.Verify(keys, fsRaw, forged); !strings.Contains(strings.Join(problems, "\n"), "the next best-ranked entry is "+third) {
		t.Fatalf("a swapped winner re-signed with the real key: problems %v", problems)
	}
	// The page has the draw's card.
	page := string(get("/seckill/"+sale+"/report?lang=fr", "text/html"))
	if !strings.Contains(page, `id="sk-draw"`) || !strings.Contains(page, `data-outcome="pass"`) {
		t.Fatalf("the report's page has no draw card:\n%.600s", page)
	}
}

// getOK is the body of a GET of url (asking for accept, unless empty), which must answer 200.
func getOK(t *testing.T, url, accept string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}
