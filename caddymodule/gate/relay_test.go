//go:build integration

package gate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// buyMany sends n purchases of distinct users (prefix+i) and returns the answers.
func buyMany(t testing.TB, base, sale, prefix string, n int) []answer {
	answers := make([]answer, n)
	parallel(n, func(i int) { answers[i] = buy(t, base, sale, prefix+strconv.Itoa(i), "") })
	return answers
}

func acceptedIDs(t testing.TB, answers []answer) []string {
	t.Helper()
	var ids []string
	for _, a := range answers {
		if a.Status == http.StatusAccepted {
			ids = append(ids, a.OrderID)
		}
	}
	return ids
}

func waitForOrders(t testing.TB, q *orderQueue, ids []string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing := 0
		for _, id := range ids {
			if !q.Has(id) {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accepted orders never reached the queue", missing, len(ids))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The broker's outage as the gateway sees it: every connection of the gateway to RabbitMQ
// cut and new ones refused (testenv.Proxy in front of the shared broker, a vhost of the
// test's own; the test's consumer reads the queue directly), then the broker reachable again.
// A restart of the broker process itself is the chaos run's (rabbitmq-restart, docs/chaos.md);
// the relay's side of an outage is the same either way, without booting a node twice.
func TestRelayLosesNoOrderWhileRabbitIsDown(t *testing.T) {
	rdb := testenv.Redis(t)
	vhost := testenv.RabbitVhost(t)
	u, err := url.Parse(vhost)
	if err != nil {
		t.Fatal(err)
	}
	broker := testenv.NewProxy(t, u.Host)
	u.Host = broker.Addr()
	queue := consumeOrders(t, vhost)
	base := startCaddy(t, newGatewayConfig(t, u.String()))
	sale := newSale(t, rdb, 1000, -time.Minute, time.Hour)

	before := buyMany(t, base, sale, "before", 50)
	ids := acceptedIDs(t, before)
	if len(ids) != 50 {
		t.Fatalf("before the outage: %s", summary(tally(before)))
	}
	waitForOrders(t, queue, ids, 20*time.Second)

	broker.Cut()
	during := buyMany(t, base, sale, "during", 100)
	if got := acceptedIDs(t, during); len(got) != 100 {
		t.Fatalf("with RabbitMQ down the gate must keep accepting (the outbox absorbs it): %s", summary(tally(during)))
	} else {
		ids = append(ids, got...)
	}
	if n := rdb.XLen(context.Background(), contract.OutboxKey(sale)).Val(); n < 100 {
		t.Errorf("outbox holds %d entries while the broker is down, want >= 100", n)
	}

	broker.Restore()
	after := buyMany(t, base, sale, "after", 50)
	ids = append(ids, acceptedIDs(t, after)...)
	if len(ids) != 200 {
		t.Fatalf("after the outage: %s", summary(tally(after)))
	}
	waitForOrders(t, queue, ids, 45*time.Second)
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool {
		return rdb.XLen(context.Background(), contract.OutboxKey(sale)).Val() == 0
	})
	if got := stockOf(t, rdb, sale); got != 800 {
		t.Errorf("stock = %d, want 800", got)
	}
}

// restrictPublishing lets guest declare and bind the topology in vhost but not publish to
// the seckill exchange: every publish closes the channel, so the relay keeps its entries pending.
func restrictPublishing(t testing.TB, amqpURL string) {
	t.Helper()
	u, _ := url.Parse(amqpURL)
	vhost := strings.TrimPrefix(u.Path, "/")
	_, err := testenv.RabbitMgmt(http.MethodPut, "/api/permissions/"+url.PathEscape(vhost)+"/guest",
		`{"configure":".*","write":"^(seckill\\.orders.*|seckill\\.dead)$","read":".*"}`)
	if err != nil {
		t.Fatal(err)
	}
}

func pendingOf(rdb redis.UniversalClient, sale string) int64 {
	p, err := rdb.XPending(context.Background(), contract.OutboxKey(sale), core.RelayGroup).Result()
	if err != nil {
		return -1
	}
	return p.Count
}

func TestRelayDeliversWhatAKilledGatewayLeftPending(t *testing.T) {
	rdb := testenv.Redis(t)
	sale := newSale(t, rdb, 100, -time.Minute, time.Hour)

	// Gateway A accepts orders but cannot publish: its relay holds them pending.
	deadVhost := testenv.RabbitVhost(t)
	restrictPublishing(t, deadVhost)
	cfgA := newGatewayConfig(t, deadVhost)
	cfgA.ClaimMinIdle = "1s"
	a := startGatewayProcess(t, cfgA)
	answers := buyMany(t, a.Base, sale, "a", 30)
	ids := acceptedIDs(t, answers)
	if len(ids) != 30 {
		t.Fatalf("gateway A: %s", summary(tally(answers)))
	}
	testenv.WaitFor(t, 20*time.Second, "gateway A's relay to hold the 30 entries pending", func() bool {
		return pendingOf(rdb, sale) == 30
	})
	a.Kill()

	// Gateway B, with a working broker, claims A's entries once they are idle.
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	cfgB := newGatewayConfig(t, vhost)
	cfgB.ClaimMinIdle = "1s"
	base := startCaddy(t, cfgB)
	more := buyMany(t, base, sale, "b", 20)
	ids = append(ids, acceptedIDs(t, more)...)
	if len(ids) != 50 {
		t.Fatalf("gateway B: %s", summary(tally(more)))
	}
	waitForOrders(t, queue, ids, 30*time.Second)
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool {
		return rdb.XLen(context.Background(), contract.OutboxKey(sale)).Val() == 0
	})
	for _, id := range ids[:30] {
		if m := queue.Get(id); m.SaleID != sale || !strings.HasPrefix(m.UserID, "a") || m.AcceptedAt.IsZero() {
			t.Errorf("message of %s = %+v", id, m)
		}
	}
}

// metricValue reads one unlabelled sample from a Prometheus text endpoint.
func metricValue(t testing.TB, metricsURL, name string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, name)), 64)
			return v
		}
	}
	return 0
}

func TestTwoGatewaysShareOneSaleAndItsSellOut(t *testing.T) {
	rdb := testenv.Redis(t)
	vhost := testenv.RabbitVhost(t)
	queue := consumeOrders(t, vhost)
	cfgA, cfgB := newGatewayConfig(t, vhost), newGatewayConfig(t, vhost)
	a, b := startGatewayProcess(t, cfgA), startGatewayProcess(t, cfgB)
	sale := newSale(t, rdb, 100, -time.Minute, time.Hour)

	const buyers = 1000
	answers := make([]answer, buyers)
	parallel(buyers, func(i int) {
		base := a.Base
		if i%2 == 1 {
			base = b.Base
		}
		answers[i] = buy(t, base, sale, "u"+strconv.Itoa(i), "")
	})
	counts := tally(answers)
	if counts["accepted"] != 100 || counts[contract.CodeSoldOut] != buyers-100 {
		t.Fatalf("answers: %s; want accepted=100 sold_out=%d", summary(counts), buyers-100)
	}
	if got := stockOf(t, rdb, sale); got != 0 {
		t.Errorf("stock = %d, want 0", got)
	}
	ids := acceptedIDs(t, answers)
	waitForOrders(t, queue, ids, 20*time.Second)
	if got := queue.Distinct(); got != 100 {
		t.Errorf("%d distinct orders in the queue, want 100", got)
	}

	// A second sale of one unit, sold through A: B answers sold_out from memory within a
	// second, without running the script.
	one := newSale(t, rdb, 1, -time.Minute, time.Hour)
	if got := buy(t, a.Base, one, "first", ""); got.Status != http.StatusAccepted {
		t.Fatalf("first buyer of the one-unit sale: %+v", got)
	}
	metricsB := fmt.Sprintf("http://127.0.0.1:%d/metrics", cfgB.AdminPort)
	i := 0
	testenv.WaitFor(t, time.Second, "gateway B to answer sold_out from memory", func() bool {
		i++
		before := metricValue(t, metricsB, "seckill_gate_script_seconds_count")
		got := buy(t, b.Base, one, "late"+strconv.Itoa(i), "")
		after := metricValue(t, metricsB, "seckill_gate_script_seconds_count")
		return got.Code == contract.CodeSoldOut && after == before
	})
}

func TestReloadKeepsTheRedisPoolAndFailsNoRequest(t *testing.T) {
	rdb := testenv.Redis(t)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	base := startCaddy(t, cfg)
	sale := newSale(t, rdb, 1_000_000, -time.Minute, time.Hour)
	app := func() *caddymodule.App {
		a, err := caddy.ActiveContext().App("seckill")
		if err != nil {
			t.Fatal(err)
		}
		return a.(*caddymodule.App)
	}

	// New connections for every request, and one retry of a request that got no HTTP answer
	// at all: while the previous server shuts down, Go's http.Server may drop a connection it
	// has just accepted before reading the request (a transport error, which browsers retry).
	// Every request that reached the gate must have been answered 202.
	fresh := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var retried atomic.Int64
	buyRetrying := func(user string) answer {
		for attempt := 0; ; attempt++ {
			req, _ := http.NewRequest(http.MethodPost, base+"/seckill/"+sale+"/buy", nil)
			req.Header.Set("X-User-ID", user)
			resp, err := fresh.Do(req)
			if err != nil {
				if attempt < 3 {
					retried.Add(1)
					continue
				}
				return answer{}
			}
			var a answer
			_ = json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
			a.Status = resp.StatusCode
			return a
		}
	}
	var stop atomic.Bool
	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				a := buyRetrying(fmt.Sprintf("w%d-%d", w, i))
				sent.Add(1)
				if a.Status != http.StatusAccepted {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%+v", a))
				}
			}
		}(w)
	}
	// Warm up, so the pool has the connections this load needs.
	testenv.WaitFor(t, 20*time.Second, "traffic to flow", func() bool { return sent.Load() > 400 })
	opened := app().RedisConnectionsOpened()
	client := app().RedisClient()

	// Same Redis settings, a changed route: the shared client must survive.
	cfg2 := cfg.JSON()
	changed := strings.Replace(string(cfg2), `"body":"ok"`, `"body":"ok, reloaded"`, 1)
	if changed == string(cfg2) {
		t.Fatal("the config did not change")
	}
	for r := 0; r < 3; r++ {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/load", cfg.AdminPort), "application/json", strings.NewReader(changed))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reload: %s", resp.Status)
		}
		changed = strings.Replace(changed, `reloaded`, `reloaded`+strconv.Itoa(r), 1)
		mark := sent.Load()
		testenv.WaitFor(t, 20*time.Second, "traffic after the reload", func() bool { return sent.Load() > mark+100 })
	}
	stop.Store(true)
	wg.Wait()

	t.Logf("%d requests, %d transport-level retries", sent.Load(), retried.Load())
	if f := failed.Load(); f != 0 {
		t.Errorf("%d of %d requests failed across the reloads; first: %v", f, sent.Load(), firstFailure.Load())
	}
	// The pool must be the same object with the same connections. While a reload runs, the
	// old config's relay is still finishing as the new one starts, so the load on the pool can
	// briefly exceed its warm size and it may dial one more connection; a new pool, or a pool
	// that dropped its connections, would be a different client or would dial far more.
	if app().RedisClient() != client {
		t.Error("the reload replaced the shared Redis client")
	}
	if got := app().RedisConnectionsOpened(); got-opened > 3 {
		t.Errorf("the reloads opened %d new Redis connections; the pool must be reused", got-opened)
	} else {
		t.Logf("connections opened during the reloads: %d", got-opened)
	}
	var status struct {
		Redis struct {
			Reachable bool `json:"reachable"`
		} `json:"redis"`
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/seckill/status", cfg.AdminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&status)
	if !status.Redis.Reachable {
		t.Error("status after reload: Redis not reachable")
	}
}
