//go:build integration

package draw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckilledge/seckill/bench/drawcheck"
	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/draw"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/drandtest"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The whole-system test of a draw: a draw sale from the first entry to the last claim, through two
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
	bin, err := binaries.Dir("../../..")
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
	// The public beacon: a stand-in drand chain with a round a second, served after one dead
	// endpoint (the backend falls back to the next), and late: no round before the close plus
	// 4 s, so the draw waits for its round (visibly, in the draw's status), then draws with it.
	beacon := drandtest.New("e2e", time.Second, time.Now().Add(-time.Hour))
	defer beacon.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	const closeIn = 12 * time.Second
	stack, err := driver.Start(ctx, driver.StartOptions{Root: "../../..", BinDir: bin, RedisAddr: redisSrv.Addr(),
		AMQPURL: testenv.AMQPURL(), MgmtURL: testenv.AMQPMgmtURL(), PGAdminURL: testenv.PGAdminURL(),
		AdminToken: "e2e-admin-token-0123456789-abcdefgh", TokenKey: "e2e-token-key-0123456789abcdef-0123456789", LogDir: t.TempDir(),
		ExtraGlobal: harness.TrustLoopbackProxy, Gateways: 2,
		Env: append([]string{"SECKILL_WEBHOOK_ALLOW_PRIVATE=1", "SECKILL_WEBHOOK_SECRETS=e2e-webhook-secret-0123456789abcdef", "SECKILL_WEBHOOK_URL=" + shop.URL},
			beacon.Env(dead.URL)...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	drv, err := driver.NewDriver(ctx, stack)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()

	const sizes, units, entrants = 3, 5, 240
	// The draw's status, read every 200 ms: it must show the wait for the beacon round.
	saleID := fmt.Sprintf("draw-e2e-%d", time.Now().UnixNano()%1e9)
	waited := make(chan string, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			var st struct{ Waiting string }
			if drv.AdminJSON(watchCtx, http.MethodGet, "/admin/sales/"+saleID+"/draw", nil, &st) == nil && strings.Contains(st.Waiting, "waiting for beacon round") {
				waited <- st.Waiting
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	beacon.HoldUntil(time.Now().Add(closeIn + 4*time.Second))
	res, err := draw.DrawSale(ctx, drv, draw.DrawSaleOptions{Sale: saleID, Close: closeIn, Entrants: entrants, Sizes: sizes, Units: units, Logf: t.Logf,
		Forward: func(user string) string {
			return "10.9." + fmt.Sprint(len(user)%200) + "." + fmt.Sprint(int(user[len(user)-1]))
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	if t.Failed() {
		t.FailNow()
	}
	select {
	case w := <-waited:
		t.Logf("the draw's status said: %s", w)
	default:
		t.Fatal("the draw never showed that it waited for its beacon round")
	}
	if beacon.Requests.Load() == 0 {
		t.Fatal("the stand-in beacon was never asked for a round")
	}
	sale, withdrawn := res.Sale, res.Withdrawn
	user := func(i int) string { return fmt.Sprintf("%s-u%03d", sale, i) }
	// Sold out in every size: the draw ends, and everyone hears of it.
	deadline := time.Now().Add(60 * time.Second)
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
	rep := draw.VerifySale(ctx, drv, sale, res.Accepted...)
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
	if !strings.Contains(dc.String(), "its BLS signature verifies under the chain's public key") ||
		!strings.Contains(dc.String(), "HMAC-SHA256(effective seed, entry id)") {
		t.Fatal("verify-draw did not check the beacon round and the effective seed")
	}
}

// binaries are the gateway and backend, built once for the package's whole-stack tests.
var binaries harness.Binaries

func TestMain(m *testing.M) { os.Exit(binaries.Run(m)) }
