//go:build integration

package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"

	// The standard handlers (respond) for the configs below.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// testNamespace is the deployment namespace of every sale and gateway of this test process:
// the relays of other deployments sharing the Redis (the demo of `make run`, other packages'
// tests, another run of these) never take the outboxes of these tests' sales, and these
// tests' relays never take theirs.
var testNamespace = testenv.ID("gate-tests-")

// testSecret is a token key used only by these tests.
const testSecret = "test-secret-test-secret-test-secret-0123"

func testKeyring(t testing.TB, ids ...string) *tokenformat.Keyring {
	t.Helper()
	var keys []tokenformat.Key
	for _, id := range ids {
		keys = append(keys, tokenformat.Key{ID: id, Secret: []byte(testSecret + id)})
	}
	kr, err := tokenformat.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// newSale preheats a sale whose window is [now+startsIn, now+endsIn) and lists it in the sales
// index, as the backend does.
func newSale(t testing.TB, rdb redis.UniversalClient, stock int, startsIn, endsIn time.Duration) string {
	t.Helper()
	sale := testenv.ID("s")
	preheat(t, rdb, sale, stock, startsIn, endsIn)
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.SRem(ctx, contract.SalesIndexKey, sale)
		rdb.Del(ctx, contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale), contract.OutboxKey(sale))
	})
	return sale
}

func preheat(t testing.TB, rdb redis.UniversalClient, sale string, stock int, startsIn, endsIn time.Duration) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	// The keys the backend passes (lua.PreheatCall): the outbox is made with its group here.
	err := lua.Preheat.Run(ctx, rdb, lua.PreheatCall{Sale: sale}.Keys(), sale, stock,
		now.Add(startsIn).UnixMilli(), now.Add(endsIn).UnixMilli(), "init", (24 * time.Hour).Milliseconds(), "", testNamespace).Err()
	if err != nil {
		t.Fatalf("preheat: %v", err)
	}
	if err := rdb.SAdd(ctx, contract.SalesIndexKey, sale).Err(); err != nil {
		t.Fatal(err)
	}
}

func stockOf(t testing.TB, rdb redis.UniversalClient, sale string) int64 {
	t.Helper()
	n, err := rdb.HGet(context.Background(), contract.MetaKey(sale), "stock").Int64()
	if err != nil {
		t.Fatalf("stock of %s: %v", sale, err)
	}
	return n
}

// gatewayConfig is what a test gateway needs.
type gatewayConfig struct {
	Port, AdminPort int
	RedisAddr       string
	AMQPURL         string
	RequireToken    bool
	RedisMode       string
	ClaimMinIdle    string
	Timeout         string
	MaxPending      int
	// Throttle, when set, is a seckill_throttle handler (JSON) right before the gate in the
	// purchase's route: the two decide in one script call (refusal.Joint).
	Throttle string
	// RelayOff runs no relay in this gateway (its Redis calls stay out of a count).
	RelayOff bool
}

func (c gatewayConfig) JSON() []byte {
	gate := map[string]any{
		"handler": "seckill_gate",
		"user":    "{http.request.header.X-User-ID}",
	}
	if c.RequireToken {
		gate["require_token"] = true
	}
	if c.RedisMode != "" {
		gate["redis"] = c.RedisMode
	}
	// Generous by default: the tests run with -race on two busy cores; the fail-closed test
	// sets its own.
	gate["timeout"] = "10s"
	if c.Timeout != "" {
		gate["timeout"] = c.Timeout
	}
	if c.MaxPending != 0 {
		gate["max_pending"] = c.MaxPending
	}
	// The relay is the app's. The shared Redis holds everyone's sales: the test namespace
	// keeps this relay to the sales of these tests.
	relay := map[string]any{"poll_interval": "20ms", "discover_interval": "300ms"}
	if c.ClaimMinIdle != "" {
		relay["claim_min_idle"] = c.ClaimMinIdle
	}
	if c.RelayOff {
		relay["disabled"] = true
	}
	buyRoute := []any{gate}
	if c.Throttle != "" {
		buyRoute = []any{json.RawMessage(c.Throttle), gate}
	}
	cfg := map[string]any{
		"admin":   map[string]any{"listen": fmt.Sprintf("127.0.0.1:%d", c.AdminPort)},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": handlertest.LogLevel()}}},
		"apps": map[string]any{
			"seckill": map[string]any{
				"redis":      map[string]any{"addrs": []string{c.RedisAddr}, "read_timeout": "5s", "dial_timeout": "500ms"},
				"amqp":       map[string]any{"url": c.AMQPURL, "reconnect_interval": "200ms"},
				"token_keys": []map[string]any{{"id": "k1", "secret": testSecret + "k1"}},
				"relay":      relay,
				"namespace":  testNamespace,
			},
			"http": map[string]any{"servers": map[string]any{"gw": map[string]any{
				"listen": []string{fmt.Sprintf("127.0.0.1:%d", c.Port)},
				"routes": []any{
					map[string]any{
						"match":  []any{map[string]any{"path": []string{"/seckill/*/buy"}}},
						"handle": buyRoute,
					},
					map[string]any{"handle": []any{map[string]any{"handler": "static_response", "body": "ok"}}},
				},
			}}},
		},
	}
	b, _ := json.Marshal(cfg)
	return b
}

func newGatewayConfig(t testing.TB, amqpURL string) gatewayConfig {
	return gatewayConfig{
		Port: testenv.FreePort(t), AdminPort: testenv.FreePort(t),
		RedisAddr: testenv.RedisAddr(), AMQPURL: amqpURL,
	}
}

// startCaddy runs the config in this process until the test ends.
func startCaddy(t testing.TB, c gatewayConfig) string {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d", c.Port)
	handlertest.StartCaddy(t, c.JSON(), base)
	return base
}

// startGatewayProcess runs the config in a Caddy subprocess until the test ends (or Kill).
func startGatewayProcess(t testing.TB, c gatewayConfig) *handlertest.Gateway {
	t.Helper()
	return handlertest.StartGateway(t, c.JSON(), fmt.Sprintf("http://127.0.0.1:%d", c.Port))
}

// answer is one decoded response of the gate.
type answer struct {
	Status  int
	Code    string `json:"code"`
	OrderID string `json:"order_id"`
	Result  string `json:"status"`
	Retry   string
}

var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 2048, MaxConnsPerHost: 0, IdleConnTimeout: 5 * time.Second},
}

// buy sends one purchase.
func buy(t testing.TB, base, sale, user, token string) answer {
	t.Helper()
	return buyWith(t, client, base, sale, user, token)
}

func buyWith(t testing.TB, client *http.Client, base, sale, user, token string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/seckill/"+sale+"/buy", nil)
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	if token != "" {
		req.Header.Set("X-Seckill-Token", token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("buy: %v", err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Errorf("buy: status %d, body %q is not JSON", resp.StatusCode, b)
	}
	a.Status = resp.StatusCode
	a.Retry = resp.Header.Get("Retry-After")
	return a
}

// orderQueue collects every message that reaches seckill.orders in one vhost.
type orderQueue struct {
	mu       sync.Mutex
	ids      map[string]contract.OrderMessage
	messages int
}

func consumeOrders(t testing.TB, url string) *orderQueue {
	t.Helper()
	q := &orderQueue{ids: map[string]contract.OrderMessage{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			q.consume(ctx, url)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return q
}

func (q *orderQueue) consume(ctx context.Context, url string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	if err := contract.DeclareTopology(ch); err != nil {
		return
	}
	deliveries, err := ch.Consume(contract.Queue, "", false, false, false, false, nil)
	if err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case d, ok := <-deliveries:
			if !ok {
				return
			}
			m, err := contract.DecodeOrderMessage(d.Body)
			q.mu.Lock()
			q.messages++
			if err == nil {
				q.ids[m.OrderID] = m
			}
			q.mu.Unlock()
			_ = d.Ack(false)
		}
	}
}

// Distinct is the number of distinct orders received.
func (q *orderQueue) Distinct() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids)
}

func (q *orderQueue) Has(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.ids[id]
	return ok
}

func (q *orderQueue) Get(id string) contract.OrderMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ids[id]
}

// parallel runs f(i) for i in [0, n) all at once, released together.
var parallel = handlertest.Parallel

func tally(answers []answer) map[string]int {
	m := map[string]int{}
	for _, a := range answers {
		k := a.Code
		if a.Status == http.StatusAccepted {
			k = "accepted"
		}
		m[k]++
	}
	return m
}

func summary(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	return strings.Join(parts, " ")
}
