package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench"
	"github.com/seckilledge/seckill/bench/drawcheck"
	"github.com/seckilledge/seckill/bench/verify"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Issue 29's whole-system test: a draw sale from the first entry to the last claim, through two
// gateways (this repository's Caddy and default Caddyfile), the backend's automatic draw at
// closes_at and its waves, RabbitMQ and Postgres, with the shop's webhooks. 240 entrants over
// 3 sizes of 5 units; wave 1's winners buy except one per size, whose unit goes to the next
// rank in wave 2 once the 3 s claim window ends; then every variant is done and every
// entrant has heard won, expired or lost. Every invariant PASSes (the draw's included), and the
// published draw checks out from its public data alone.
func TestADrawSaleRunsFromEntryToTheLastClaim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_ = testenv.Postgres(t)
	redisSrv := testenv.StartRedis(t)
	bin, err := binaries.Dir("..")
	if err != nil {
		t.Fatal(err)
	}
	// The shop: counts the draw events it is sent, by type (deduped by event id).
	var mu sync.Mutex
	seen := map[string]bool{}
	byType := map[string]int{}
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID, Type string
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &ev) == nil && ev.ID != "" {
			mu.Lock()
			if !seen[ev.ID] {
				seen[ev.ID] = true
				byType[ev.Type]++
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer shop.Close()
	stack, err := bench.Start(ctx, bench.StartOptions{Root: "..", BinDir: bin, RedisAddr: redisSrv.Addr(),
		AMQPURL: testenv.AMQPURL(), MgmtURL: testenv.AMQPMgmtURL(), PGAdminURL: testenv.PGAdminURL(),
		AdminToken: "e2e-admin-token-0123456789-abcdefgh", TokenKey: "e2e-token-key-0123456789abcdef-0123456789", LogDir: t.TempDir(),
		ExtraGlobal: harness.TrustLoopbackProxy, Gateways: 2,
		Env: []string{"SECKILL_WEBHOOK_ALLOW_PRIVATE=1", "SECKILL_WEBHOOK_SECRETS=e2e-webhook-secret-0123456789abcdef", "SECKILL_WEBHOOK_URL=" + shop.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	drv, err := bench.NewDriver(ctx, stack)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()

	const sizes, units, entrants = 3, 5, 240
	sale := fmt.Sprintf("e2e-draw-%d", time.Now().UnixNano()%1e9)
	now := time.Now().UTC().Truncate(time.Second)
	closes := now.Add(12 * time.Second)
	vs := []map[string]any{}
	for i := range sizes {
		vs = append(vs, map[string]any{"id": bench.SizeName(i), "stock": units})
	}
	spec := map[string]any{"id": sale, "variants": vs, "pay_within": "1h",
		"starts_at": closes.Format(time.RFC3339), "ends_at": closes.Add(time.Hour).Format(time.RFC3339),
		"draw": map[string]any{"opens_at": now.Add(-time.Minute).Format(time.RFC3339), "closes_at": closes.Format(time.RFC3339),
			"claim_within": "3s", "difficulty": [2]int{0, 0}}}
	if err := drv.AdminJSON(ctx, http.MethodPost, "/admin/sales", spec, nil); err != nil {
		t.Fatal(err)
	}
	if err := drv.AdminJSON(ctx, http.MethodPost, "/admin/sales/"+sale+"/preheat", nil, nil); err != nil {
		t.Fatal(err)
	}

	cl := &http.Client{Timeout: 10 * time.Second}
	call := func(gw int, method, path, user, body string, hdr ...string) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, stack.Gateways[gw%len(stack.Gateways)]+path, rd)
		req.Header.Set("X-User-ID", user)
		req.Header.Set("X-Forwarded-For", "10.9."+fmt.Sprint(len(user)%200)+"."+fmt.Sprint(int(user[len(user)-1])))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	user := func(i int) string { return fmt.Sprintf("%s-u%03d", sale, i) }
	// The entries, through both gateways; every tenth entrant changes his size, every
	// twentieth withdraws.
	var wg sync.WaitGroup
	sizeOf := make([]string, entrants)
	for i := range entrants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := bench.SizeName(i % sizes)
			st, out := call(i, http.MethodPost, "/seckill/"+sale+"/draw", user(i), `{"variant":"`+v+`"}`)
			if st != http.StatusOK || out["state"] != "entered" {
				t.Errorf("entrant %d: %d %v", i, st, out)
				return
			}
			if i%10 == 0 {
				v = bench.SizeName((i + 1) % sizes)
				if st, out2 := call(i+1, http.MethodPost, "/seckill/"+sale+"/draw", user(i), `{"variant":"`+v+`"}`); st != http.StatusOK || out2["entry_id"] != out["entry_id"] {
					t.Errorf("entrant %d changing size: %d %v (first %v)", i, st, out2, out["entry_id"])
				}
			}
			if i%20 == 5 {
				if st, out := call(i, http.MethodDelete, "/seckill/"+sale+"/draw", user(i), ""); st != http.StatusOK || out["state"] != "withdrawn" {
					t.Errorf("entrant %d withdrawing: %d %v", i, st, out)
				}
				v = ""
			}
			sizeOf[i] = v
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Nobody buys before the draw: a token now is refused.
	if st, out := call(0, http.MethodPost, "/seckill/"+sale+"/token", user(1), ""); st == http.StatusOK {
		t.Fatalf("a token before the draw: %d %v", st, out)
	}
	// The backend draws by itself at closes_at.
	var status bench.DrawStatus
	for {
		if err := drv.AdminJSON(ctx, http.MethodGet, "/admin/sales/"+sale+"/draw", nil, &status); err != nil {
			t.Fatal(err)
		}
		if status.State == "drawn" || status.State == "done" {
			break
		}
		if time.Now().After(closes.Add(60 * time.Second)) {
			t.Fatalf("no draw a minute after closes_at: %+v", status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	withdrawn := entrants / 20
	if status.Entries != entrants-withdrawn {
		t.Fatalf("%d entries fixed, want %d", status.Entries, entrants-withdrawn)
	}
	// Each entrant's state; wave 1's winners buy, except the best-ranked of each size.
	time.Sleep(time.Until(closes))
	skipped := map[string]bool{}
	buy := func(i int, v string) (int, map[string]any) {
		st, out := call(i, http.MethodPost, "/seckill/"+sale+"/token", user(i), "")
		if st != http.StatusOK {
			return st, out
		}
		tok, _ := out["token"].(string)
		return call(i+1, http.MethodPost, "/seckill/"+sale+"/buy", user(i), `{"variant":"`+v+`"}`, "X-Seckill-Token", tok)
	}
	bought := 0
	var accepted []verify.Accepted
	claimWave := func(wave int) int {
		n := 0
		for i := range entrants {
			st, out := call(i, http.MethodGet, "/seckill/"+sale+"/draw", user(i), "")
			if st != http.StatusOK || out["state"] != "won" {
				continue
			}
			if w, _ := out["wave"].(float64); int(w) != wave {
				continue
			}
			n++
			v := sizeOf[i]
			if wave == 1 && !skipped[v] && out["rank"] == float64(1) {
				skipped[v] = true // lets his claim window pass
				continue
			}
			// Another size than the one won is refused: not_admitted, or sold_out when that size
			// is gone already (the gateway knows it without asking Redis).
			other := bench.SizeName((i + 2) % sizes)
			if other != v {
				if st, out := buy(i, other); !(st == http.StatusForbidden && out["code"] == "not_admitted") && !(st == http.StatusConflict && out["code"] == "sold_out") {
					t.Errorf("winner %d buying %s instead of %s: %d %v", i, other, v, st, out)
				}
			}
			if st, out := buy(i, v); st != http.StatusAccepted {
				t.Errorf("winner %d of wave %d buying %s: %d %v", i, wave, v, st, out)
			} else {
				bought++
				id, _ := out["order_id"].(string)
				accepted = append(accepted, verify.Accepted{OrderID: id, UserID: user(i), At: time.Now()})
			}
		}
		return n
	}
	if n := claimWave(1); n != sizes*units {
		t.Fatalf("%d winners in wave 1, want %d", n, sizes*units)
	}
	// A loser (waiting) cannot buy.
	for i := range entrants {
		if st, out := call(i, http.MethodGet, "/seckill/"+sale+"/draw", user(i), ""); st == http.StatusOK && out["state"] == "waiting" {
			if st, out := buy(i, sizeOf[i]); st != http.StatusForbidden || out["code"] != "not_admitted" {
				t.Errorf("a waiting entrant bought: %d %v", st, out)
			}
			break
		}
	}
	// Wave 2 opens once the 3 s window ends: one unit per size, to the next rank.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := drv.AdminJSON(ctx, http.MethodGet, "/admin/sales/"+sale+"/draw", nil, &status); err != nil {
			t.Fatal(err)
		}
		waves2 := 0
		for _, w := range status.Waves {
			if w.Wave == 2 {
				waves2++
			}
		}
		if waves2 == sizes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second wave in every size: %+v", status.Waves)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := claimWave(2); n != sizes {
		t.Fatalf("%d winners in wave 2, want %d (one unsold unit per size)", n, sizes)
	}
	if bought != sizes*units {
		t.Fatalf("%d units bought, want %d", bought, sizes*units)
	}
	// Sold out in every size: the draw ends, and everyone hears of it.
	deadline = time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		won, expired, lost := byType[contract.EventDrawWon], byType[contract.EventDrawExpired], byType[contract.EventDrawLost]
		mu.Unlock()
		if won == sizes*units+sizes && expired == sizes && lost == entrants-withdrawn-won {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhooks: won %d (want %d), expired %d (want %d), lost %d (want %d)",
				won, sizes*units+sizes, expired, sizes, lost, entrants-withdrawn-sizes*units-sizes)
		}
		time.Sleep(250 * time.Millisecond)
	}
	rep := drv.VerifySale(ctx, sale, accepted...)
	for _, c := range rep.Checks {
		t.Logf("%s %d. %s: %s", c.Verdict, c.N, c.Name, c.Detail)
	}
	if !rep.OK() {
		t.Fatal("an invariant failed")
	}
	// What anyone can check from the public data alone, through the gateway: the seed opens
	// the commitment, the entries the root, each wave its next ranks, and two entrants' proofs.
	dc, err := drawcheck.Verify(ctx, stack.Gateways[1], sale, user(0), user(7))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(dc.String())
	if !dc.OK() {
		t.Fatal("verify-draw FAILs on the published draw")
	}
}
