//go:build integration

package report_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/report"
	"github.com/seckilledge/seckill/caddymodule/reportpage"
	"github.com/seckilledge/seckill/contract"
	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/testenv"
)

func place(seed, ekey []byte, sale, user string) string {
	m := hmac.New(sha256.New, ekey)
	m.Write([]byte("seckill-room-entry\x00" + sale + "\x00" + user))
	raw := m.Sum(nil)[:16]
	entry := report.EntryID(raw)
	return string(invariants.RoomRank(seed, entry)) + string(raw) + user
}

// An ended room sale (its queue and log in Redis as the room's scripts write them, its orders
// in Postgres) gets one report: built, signed, stored, served with its evidence and key; the
// signature checks against the served key, the evidence against the signed digest, the figures
// are the evidence's and the permutation check passes. A second publication writes nothing and
// the stored row refuses UPDATE and DELETE. SECKILL_REPORT_ENTRANTS sets the pre-queue's size
// (the measured run of BENCHMARKS.md: 1000000).
func TestAnEndedRoomSaleGetsOneSignedReportServedWithItsEvidenceAndKey(t *testing.T) {
	ctx := context.Background()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	n := 200
	if v, err := strconv.Atoi(os.Getenv("SECKILL_REPORT_ENTRANTS")); err == nil && v > 0 {
		n = v
	}
	sale := fmt.Sprintf("rep%d", time.Now().UnixNano())
	now := time.Now()
	starts, ends := now.Add(-time.Hour), now.Add(-time.Minute)
	units := 10
	if _, err := pool.Exec(ctx, `INSERT INTO sales (id, initial_stock, stock, starts_at, ends_at, room) VALUES ($1, $2, 0, $3, $4, '{}')`,
		sale, units, starts, ends); err != nil {
		t.Fatal(err)
	}
	seed, ekey := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(seed)
	_, _ = rand.Read(ekey)
	sum := sha256.Sum256(seed)
	room := contract.RoomKey(sale)
	t.Cleanup(func() { rdb.Del(context.Background(), room, contract.RoomQueueKey(sale), contract.RoomLogKey(sale)) })
	rdb.HSet(ctx, room, "seed", hex.EncodeToString(seed), "ekey", hex.EncodeToString(ekey), "commitment", hex.EncodeToString(sum[:]),
		"prequeue_ms", "900000", "rate", "50", "admitted", strconv.Itoa(3*units/2), "left", "0")
	members := make([]string, 0, n)
	for i := 0; i < n; i++ {
		members = append(members, place(seed, ekey, sale, fmt.Sprintf("u%07d", i)))
	}
	for i := 0; i < n; i += 10000 {
		pipe := rdb.Pipeline()
		for _, m := range members[i:min(i+10000, n)] {
			pipe.ZAdd(ctx, contract.RoomQueueKey(sale), redis.Z{Score: 0, Member: m})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	order, err := rdb.ZRange(ctx, contract.RoomQueueKey(sale), 0, int64(3*units/2)-1).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := starts.UnixMilli()
	for i, m := range order {
		user := m[48:]
		rdb.RPush(ctx, contract.RoomLogKey(sale), fmt.Sprintf("a:%d:%d:%s", at+int64(i), units, user))
		rdb.RPush(ctx, contract.RoomLogKey(sale), fmt.Sprintf("t:%d:%d:%s:%022d", at+int64(i)+int64(100*i), at+600000, user, i))
		if i < units {
			if _, err := pool.Exec(ctx, `INSERT INTO orders (order_id, sale_id, user_id, status, accepted_at) VALUES ($1, $2, $3, 'paid', $4)`,
				backendtest.OrderIDAt(t, time.UnixMilli(at+int64(200*i))), sale, user, time.UnixMilli(at+int64(200*i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	key, err := report.ParseKey("demo")
	if err != nil {
		t.Fatal(err)
	}
	p := &report.Publisher{Pool: pool, Redis: rdb, Key: key, Page: reportpage.Must().Serve}
	began := time.Now()
	ok, err := p.Publish(ctx, sale)
	if err != nil || !ok {
		t.Fatalf("publish: %v %v", ok, err)
	}
	took := time.Since(began)
	if ok, err := p.Publish(ctx, sale); err != nil || ok {
		t.Fatalf("a second publication: %v %v, want nothing written", ok, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE sale_reports SET signature = 'x' WHERE sale_id = $1`, sale); err == nil {
		t.Fatal("a published report was updated")
	}
	if _, err := pool.Exec(ctx, `DELETE FROM sale_reports WHERE sale_id = $1`, sale); err == nil {
		t.Fatal("a published report was deleted")
	}
	mux := http.NewServeMux()
	p.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) []byte {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	var keys rep.KeySet
	var signed rep.Signed
	_ = json.Unmarshal(get("/.well-known/seckill-report-keys"), &keys)
	if err := json.Unmarshal(get("/seckill/"+sale+"/report"), &signed); err != nil {
		t.Fatal(err)
	}
	evidence := get("/seckill/" + sale + "/report/evidence")
	r, err := rep.VerifySignature(signed, keys)
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Digest(evidence); d.SHA256 != r.Evidence.SHA256 {
		t.Fatalf("evidence digest %s, report %s", d.SHA256, r.Evidence.SHA256)
	}
	c := rep.Compute(evidence, int64(units))
	want := *r
	c.Apply(&want)
	a, _ := json.Marshal(r.Figures)
	b, _ := json.Marshal(want.Figures)
	if !bytes.Equal(a, b) || r.Figures.Entrants != int64(n) || r.Figures.PreQueued != int64(n) || r.Figures.Admitted != int64(3*units/2) ||
		r.Figures.Bought != int64(units) || r.Checks.Permutation.Result != rep.Pass || !r.DemoKey || r.Timeline.SoldOut == "" {
		t.Fatalf("report figures %s (evidence %s), checks %+v", a, b, r.Checks)
	}
	resp, _ := http.Get(srv.URL + "/seckill/nosuchsale/report")
	if resp.StatusCode != 404 {
		t.Fatalf("unknown sale: %d", resp.StatusCode)
	}
	// A browser gets the page, in its language, naming the key that signed; the page's link
	// (?format=json) gets the signed document again.
	page := func(path string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
		req.Header.Set("Accept-Language", "ja-JP,ja;q=0.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := page("/seckill/" + sale + "/report"); resp.StatusCode != 200 || resp.Header.Get("Content-Language") != "ja" ||
		!strings.Contains(body, `<html lang="ja"`) || !strings.Contains(body, signed.Signature.Kid) || !strings.Contains(body, "-sale "+sale) {
		t.Errorf("the report's page: %d %v\n%.400s", resp.StatusCode, resp.Header, body)
	}
	if resp, body := page("/seckill/" + sale + "/report?format=json"); resp.StatusCode != 200 || body != string(get("/seckill/"+sale+"/report")) {
		t.Errorf("?format=json: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := page("/seckill/nosuchsale/report"); resp.StatusCode != 404 || !strings.Contains(body, `"code":"unknown_sale"`) {
		t.Errorf("a browser's unknown sale: %d %s", resp.StatusCode, body)
	}
	t.Logf("entrants %d: built, signed and stored in %v; evidence %d bytes, report %d bytes", n, took, len(evidence), len(signed.Report))
}
