//go:build integration

package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/backend/orders"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"

	// The standard handlers (tracing, static_response) and every seckill module.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/seckilledge/seckill"
)

// Admin tokens of the backend these tests run: one admin (alice) and one viewer.
const (
	aliceToken  = "systemtest-alice-token-0123456789-ab"
	viewerToken = "systemtest-viewer-token-0123456789-a"
)

func quietLog() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// system is one deployment under test: its own Postgres database, RabbitMQ vhost (with the
// topology) and namespace on the shared Redis, and the backend's service over them.
type system struct {
	t         testing.TB
	ns        string
	rdb       *redis.Client
	pool      *pgxpool.Pool
	amqp      string
	svc       *backend.Service
	adminBase string // the backend's admin API (started by admin())
}

func newSystem(t testing.TB) *system {
	t.Helper()
	return newSystemOn(t, testenv.RabbitVhost(t))
}

// newSystemOn is newSystem on the broker at amqpURL (a private node a test may kill).
func newSystemOn(t testing.TB, amqpURL string) *system {
	t.Helper()
	ctx := context.Background()
	pg := testenv.PostgresFrom(t, backend.SchemaDigest(), backend.Migrate)
	pool, err := pgxpool.New(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rdb := testenv.Redis(t)
	testenv.Topology(t, amqpURL)
	tokens, err := backend.ParseTokens("alice:"+aliceToken+":admin,look:"+viewerToken+":viewer", "")
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.ID("sys-")
	svc := backend.New(backend.Options{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 5*time.Second),
		Compensator: &orders.Compensator{Pool: pool, Redis: rdb, Log: quietLog()}, Log: quietLog(),
		Tokens: tokens, Retention: time.Hour, Grace: time.Minute, Namespace: ns, SweeperLock: testenv.ID("sweeper-")})
	return &system{t: t, ns: ns, rdb: rdb, pool: pool, amqp: amqpURL, svc: svc}
}

// sale creates an open sale of stock units in Postgres and preheats it (with the system's
// namespace, so only this system's relays take its outbox).
func (s *system) sale(stock int) string {
	s.t.Helper()
	id := testenv.ID("s")
	now := time.Now()
	ctx := context.Background()
	if _, err := s.svc.Sales.CreateSale(ctx, backend.SaleSpec{ID: id, Stock: stock, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PayWithin: "15m"}); err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.svc.Sales.Preheat(ctx, id); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		ctx := context.Background()
		s.rdb.SRem(ctx, contract.SalesIndexKey, id)
		s.rdb.Del(ctx, contract.MetaKey(id), contract.BuyersKey(id), contract.TokensKey(id), contract.OutboxKey(id),
			contract.CompensatedKey(id))
	})
	return id
}

// consume runs the backend's consumer (tracer nil: tracing off) until the test ends.
func (s *system) consume(tracer trace.Tracer) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &orders.Consumer{URL: s.amqp, Writer: &orders.Writer{Pool: s.pool}, Compensator: s.svc.Compensator,
		BatchSize: 50, BatchWait: 10 * time.Millisecond, Log: quietLog()}
	if tracer != nil {
		c.Tracer = tracer
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	s.t.Cleanup(func() { cancel(); <-done })
}

// admin serves the backend's admin API on a loopback listener until the test ends.
func (s *system) admin() string {
	s.t.Helper()
	srv := httptest.NewServer(s.svc.Handler(prometheus.NewRegistry(), false))
	s.t.Cleanup(srv.Close)
	s.adminBase = srv.URL
	return srv.URL
}

// control sends an admin request as token and returns its status and decoded body.
func (s *system) control(token, method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.adminBase+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := checked(s.t).Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

// orderStatus is the order's row status in Postgres, "" while there is none.
func (s *system) orderStatus(order string) string {
	var st string
	_ = s.pool.QueryRow(context.Background(), `SELECT status FROM orders WHERE order_id = $1`, order).Scan(&st)
	return st
}

// gatewayJSON is the config of one gateway of the system on port (admin endpoint on
// adminPort): the seckill app on the shared Redis and the system's vhost and namespace, and a
// buy route whose handlers are wrap (e.g. Caddy's tracing) followed by seckill_gate. relay
// false runs no relay in it.
func (s *system) gatewayJSON(port, adminPort int, relay bool, wrap ...map[string]any) []byte {
	handlers := []any{}
	for _, w := range wrap {
		handlers = append(handlers, w)
	}
	handlers = append(handlers, map[string]any{"handler": "seckill_gate", "user": "{http.request.header.X-User-ID}", "timeout": "10s"})
	relayCfg := map[string]any{"poll_interval": "20ms", "discover_interval": "300ms"}
	if !relay {
		relayCfg = map[string]any{"disabled": true}
	}
	level := "ERROR"
	if l := os.Getenv("SECKILL_TEST_LOG"); l != "" {
		level = l
	}
	cfg := map[string]any{
		"admin":   map[string]any{"listen": fmt.Sprintf("127.0.0.1:%d", adminPort)},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": level}}},
		"apps": map[string]any{
			"seckill": map[string]any{
				"redis":     map[string]any{"addrs": []string{testenv.RedisAddr()}, "read_timeout": "5s", "dial_timeout": "500ms"},
				"amqp":      map[string]any{"url": s.amqp, "reconnect_interval": "200ms"},
				"relay":     relayCfg,
				"namespace": s.ns,
			},
			"http": map[string]any{"servers": map[string]any{"gw": map[string]any{
				"listen": []string{fmt.Sprintf("127.0.0.1:%d", port)},
				"routes": []any{
					map[string]any{"match": []any{map[string]any{"path": []string{"/seckill/*/buy"}}}, "handle": handlers},
					map[string]any{"handle": []any{map[string]any{"handler": "static_response", "body": "ok"}}},
				},
			}}},
		},
	}
	b, _ := json.Marshal(cfg)
	return b
}

// startCaddy runs a gateway config in this process until the test ends and returns its base URL.
func startCaddy(t testing.TB, port int, cfg []byte) string {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	handlertest.StartCaddy(t, cfg, base)
	return base
}

// answer is one decoded response of the gate.
type answer struct {
	Status  int
	Code    string `json:"code"`
	OrderID string `json:"order_id"`
}

// buy sends one purchase as user, with extra request headers.
func buy(t testing.TB, base, sale, user string, headers map[string]string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/seckill/"+sale+"/buy", nil)
	req.Header.Set("X-User-ID", user)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := checked(t).Do(req)
	if err != nil {
		t.Fatalf("buy: %v", err)
	}
	defer resp.Body.Close()
	a := answer{Status: resp.StatusCode}
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return a
}
