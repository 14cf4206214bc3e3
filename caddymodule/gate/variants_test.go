//go:build integration

package gate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// inProcessGate is a seckill_gate handler on the real Redis, without Caddy around it: the
// decision, the body, the answers and the sold-out flags fed by the real events.
func inProcessGate(t testing.TB, rdb *redis.Client) (*Gate, *caddymodule.SaleEvents) {
	t.Helper()
	events := caddymodule.NewSaleEvents(rdb, zap.NewNop())
	t.Cleanup(func() { _ = events.Destruct() })
	testenv.WaitFor(t, 5*time.Second, "the events subscription", events.Connected)
	g := &Gate{Subject: handler.Subject{Sale: "{http.request.uri.path.1}", User: "{http.request.header.X-User-ID}"}}
	g.logger, g.RetryAfter = zap.NewNop(), caddy.Duration(time.Second)
	g.decider = &core.Decider{Store: core.RedisStore{R: rdb}, Caller: edge.Caller{Timeout: 5 * time.Second},
		Shards: new(caddymodule.ShardCounts), SoldOut: events, Now: time.Now, NewOrderID: uuidV7}
	return g, events
}

// variantAnswer is any answer of the gate.
type variantAnswer struct {
	Status   int    `json:"-"`
	Raw      string `json:"-"`
	Code     string `json:"code"`
	OrderID  string `json:"order_id"`
	Variant  string `json:"variant"`
	Quantity int    `json:"quantity"`
	Held     int    `json:"held"`
}

func buyBody(t testing.TB, g *Gate, sale, user, body string) variantAnswer {
	req := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/seckill/" + sale + "/buy"},
		Header: http.Header{"X-User-Id": {user}}, Body: http.NoBody, Host: "gateway", ContentLength: int64(len(body))}
	if body != "" {
		req.Body = httpBody(body)
	}
	repl := caddyhttp.NewTestReplacer(req)
	req = req.WithContext(context.WithValue(context.Background(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	if err := g.ServeHTTP(w, req, nil); err != nil {
		t.Errorf("ServeHTTP: %v", err)
	}
	a := variantAnswer{Status: w.Code, Raw: w.Body.String()}
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Errorf("body %q: %v", w.Body, err)
	}
	return a
}

// newVariantSale preheats a selling sale with variants and a per-user limit.
func newVariantSale(t testing.TB, rdb *redis.Client, limit int, variants ...lua.Variant) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("s")
	now := time.Now()
	t.Cleanup(func() { rdb.Del(ctx, lua.GateCall{Sale: sale}.Keys()...) })
	if _, _, err := (lua.PreheatCall{Sale: sale, Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour),
		Retention: time.Hour, Limit: limit, Variants: variants, Namespace: testNamespace}).Run(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	return sale
}

func TestGateHTTPVariantRules(t *testing.T) {
	rdb := testenv.Redis(t)
	g, _ := inProcessGate(t, rdb)
	sale := newVariantSale(t, rdb, 2, lua.Variant{ID: "red", Stock: 3}, lua.Variant{ID: "blue", Stock: 5})
	cases := []struct {
		name, user, body string
		status           int
		code             string
	}{
		{"no variant on a sale with two", "u1", "", 400, "bad_request"},
		{"unknown variant", "u1", `{"variant":"green"}`, 400, "bad_request"},
		{"quantity above the limit", "u1", `{"variant":"red","quantity":3}`, 400, "bad_request"},
		{"quantity zero", "u1", `{"variant":"red","quantity":0}`, 400, "bad_request"},
		{"unknown field", "u1", `{"variant":"red","qty":1}`, 400, "bad_request"},
		{"not JSON", "u1", `red`, 400, "bad_request"},
		{"no user comes first", "", `garbage`, 401, "unauthenticated"},
	}
	for _, c := range cases {
		if a := buyBody(t, g, sale, c.user, c.body); a.Status != c.status || a.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, a.Status, a.Raw, c.status, c.code)
		}
	}
	a := buyBody(t, g, sale, "u1", `{"variant":"red","quantity":2}`)
	if a.Status != 202 || a.Variant != "red" || a.Quantity != 2 || a.OrderID == "" {
		t.Fatalf("accepted: %d %s", a.Status, a.Raw)
	}
	if a := buyBody(t, g, sale, "u1", `{"variant":"blue"}`); a.Status != 409 || a.Code != "limit_reached" || a.Held != 2 {
		t.Fatalf("above the limit: %d %s, want 409 limit_reached held 2", a.Status, a.Raw)
	}
	if a := buyBody(t, g, sale, "u2", `{"variant":"red","quantity":2}`); a.Status != 409 || a.Code != "sold_out" || a.Variant != "red" {
		t.Fatalf("2 of the 1 red left: %d %s, want sold_out naming red", a.Status, a.Raw)
	}
	if a := buyBody(t, g, sale, "u2", `{"variant":"red"}`); a.Status != 202 {
		t.Fatalf("the last red: %d %s", a.Status, a.Raw)
	}
	if n := stockOf(t, rdb, sale); n != 5 {
		t.Fatalf("total stock %d, want 5", n)
	}
}

// A variant that sells out is remembered per variant: its buyers are answered from memory
// (even when a unit comes back behind the gate's back) while another variant still sells; a
// restock of the sale clears the flag.
func TestGateRemembersASoldOutVariantUntilRestock(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	g, events := inProcessGate(t, rdb)
	sale := newVariantSale(t, rdb, 1, lua.Variant{ID: "red", Stock: 1}, lua.Variant{ID: "blue", Stock: 5})
	if a := buyBody(t, g, sale, "u1", `{"variant":"red"}`); a.Status != 202 {
		t.Fatalf("the only red: %d %s", a.Status, a.Raw)
	}
	testenv.WaitFor(t, 5*time.Second, "the variant's sold_out event", func() bool {
		return events.SoldOut(contract.VariantTarget(sale, "red"))
	})
	if events.SoldOut(sale) {
		t.Fatal("the sale is flagged sold out while blue sells")
	}
	// A unit of red comes back without an event: the flag still answers.
	rdb.HIncrBy(ctx, contract.MetaKey(sale), "v:red", 1)
	rdb.HIncrBy(ctx, contract.MetaKey(sale), "stock", 1)
	if a := buyBody(t, g, sale, "u2", `{"variant":"red"}`); a.Status != 409 || a.Code != "sold_out" || a.Variant != "red" {
		t.Fatalf("red from memory: %d %s", a.Status, a.Raw)
	}
	if a := buyBody(t, g, sale, "u2", `{"variant":"blue"}`); a.Status != 202 || a.Variant != "blue" {
		t.Fatalf("blue while red is sold out: %d %s", a.Status, a.Raw)
	}
	rdb.Publish(ctx, contract.EventsChannel, contract.EventRestock+":"+sale)
	testenv.WaitFor(t, 5*time.Second, "the restock to clear the variant's flag", func() bool {
		return !events.SoldOut(contract.VariantTarget(sale, "red"))
	})
	if a := buyBody(t, g, sale, "u3", `{"variant":"red"}`); a.Status != 202 {
		t.Fatalf("red after the restock: %d %s", a.Status, a.Raw)
	}
}

// A sale without variants and a limit of 1 answers exactly as before: the same 202 body, and
// already_bought with the order; an empty JSON object is the default item.
func TestGateHTTPSingleStockSaleIsUnchanged(t *testing.T) {
	rdb := testenv.Redis(t)
	g, _ := inProcessGate(t, rdb)
	sale := newSale(t, rdb, 5, -time.Minute, time.Hour)
	a := buyBody(t, g, sale, "u1", "")
	if want := `{"order_id":"` + a.OrderID + `","status":"queued"}`; a.Status != 202 || a.Raw != want {
		t.Fatalf("accepted: %d %s, want %s", a.Status, a.Raw, want)
	}
	b := buyBody(t, g, sale, "u1", "{}")
	if want := `{"code":"already_bought","message":"` + core.AlreadyBought.Message() + `","order_id":"` + a.OrderID + `"}`; b.Status != 409 || b.Raw != want {
		t.Fatalf("second purchase: %d %s, want %s", b.Status, b.Raw, want)
	}
	if c := buyBody(t, g, sale, "u2", `{"variant":"red"}`); c.Status != 400 || c.Code != "bad_request" {
		t.Fatalf("a variant on a sale without: %d %s", c.Status, c.Raw)
	}
}

// 200 concurrent buyers through the handler, quantities 1 to 3 with a limit of 3, all on one
// variant: the units accepted are exactly the variant's stock, never more.
func TestGateHTTPNeverOversellsAVariantUnderConcurrentBuyers(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	g, _ := inProcessGate(t, rdb)
	const stock = 150
	sale := newVariantSale(t, rdb, 3, lua.Variant{ID: "hot", Stock: stock}, lua.Variant{ID: "cold", Stock: 10})
	var units atomic.Int64
	var wg sync.WaitGroup
	codes := sync.Map{}
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := 1 + i%3
			a := buyBody(t, g, sale, "u"+strconv.Itoa(i), `{"variant":"hot","quantity":`+strconv.Itoa(q)+`}`)
			if a.Status == 202 {
				units.Add(int64(q))
			}
			codes.Store(a.Code, true)
		}()
	}
	wg.Wait()
	meta := rdb.HGetAll(ctx, contract.MetaKey(sale)).Val()
	left, _ := strconv.Atoi(meta["v:hot"])
	if units.Load() > stock || int(units.Load())+left != stock || left < 0 || meta["v:cold"] != "10" {
		t.Fatalf("%d units accepted of %d, meta %v", units.Load(), stock, meta)
	}
	if left > 2 {
		t.Fatalf("%d units of hot left with 200 buyers of up to 3: the buyers were refused wrongly", left)
	}
	var unexpected []string
	codes.Range(func(k, _ any) bool {
		if c := k.(string); c != "" && c != "sold_out" {
			unexpected = append(unexpected, c)
		}
		return true
	})
	if len(unexpected) > 0 {
		t.Fatalf("unexpected codes %s", strings.Join(unexpected, ","))
	}
}

type stringBody struct{ *strings.Reader }

func (stringBody) Close() error { return nil }

func httpBody(s string) stringBody { return stringBody{strings.NewReader(s)} }
