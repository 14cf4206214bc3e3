package draw

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

// testSecret is a token key used only by these tests.
const testSecret = "draw-test-secret-draw-test-secret-0123456789"

// drawArgs is a draw sale written straight into Redis, as the backend's preheat and
// draw_setup.lua leave it (docs/draw.md), so these tests need no backend.
type drawArgs struct {
	Variants          map[string]int // variant -> units; nil: a sale without variants (Stock)
	Stock             int
	OpensIn, ClosesIn time.Duration
	DMin, DMax        int
}

// newDraw writes a draw sale and returns its id.
func newDraw(t testing.TB, rdb redis.UniversalClient, a drawArgs) string {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("d")
	now := time.Now()
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	stock := a.Stock
	meta := map[string]any{"starts_ms": ms(a.ClosesIn + time.Hour), "ends_ms": ms(a.ClosesIn + 2*time.Hour), "state": "open", "draw": 1}
	if a.Variants != nil {
		stock = 0
		only := ""
		for v, n := range a.Variants {
			meta[contract.VariantField(v)] = n
			stock += n
			only = v
		}
		meta[contract.FieldVariants] = len(a.Variants)
		if len(a.Variants) == 1 {
			meta[contract.FieldOnlyVariant] = only
		}
	}
	meta["stock"] = stock
	pipe := rdb.TxPipeline()
	pipe.HSet(ctx, contract.MetaKey(sale), meta)
	pipe.HSet(ctx, contract.DrawKey(sale), map[string]any{"seed": strings.Repeat("ab", 32), "commitment": strings.Repeat("cd", 32),
		"opens_ms": ms(a.OpensIn), "closes_ms": ms(a.ClosesIn), "claim_ms": 60000, "dmin": a.DMin, "dmax": a.DMax, "state": "open"})
	pipe.PExpire(ctx, contract.MetaKey(sale), 3*time.Hour+a.ClosesIn)
	pipe.PExpire(ctx, contract.DrawKey(sale), 3*time.Hour+a.ClosesIn)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.DrawKey(sale), contract.DrawEntriesKey(sale),
			lua.DrawSpentKey(sale), contract.BuyersKey(sale))
	})
	return sale
}

// gatewayConfig is a gateway serving the draw's routes, and behind the draw on
// /seckill/*/challenge a stand-in for the waiting room that answers "room".
type gatewayConfig struct {
	Port int
	// Port2, when set, is a second server with its own seckill_draw instance (its own cache),
	// as a second gateway's would be.
	Port2 int
	Draw  map[string]any // extra fields of the seckill_draw handler
	// Result, when set, is the body answered on /seckill/*/draw/result (the backend's, which
	// the shipped gateways proxy): the entry page reads how the draw is made from it.
	Result string
	// Two asks a gateway of the package's pool for the second server (Port2).
	Two bool
	// Setup, when set, completes a pool gateway's config when the pool is loaded (a stand-in
	// server it names): tb is the pool's, which keeps what it starts until the package's
	// tests end.
	Setup func(tb testing.TB, c *gatewayConfig)
}

func newGatewayConfig(t testing.TB) gatewayConfig {
	return gatewayConfig{Port: testenv.FreePort(t)}
}

func (c gatewayConfig) JSON() []byte {
	return handlertest.Config(appConfig(testenv.RedisAddr()), c.servers(nil, c.Port, c.Port2))
}

// appConfig is the seckill app of a gateway over Redis at redisAddr.
func appConfig(redisAddr string) map[string]any {
	return map[string]any{
		"redis":      map[string]any{"addrs": []string{redisAddr}, "read_timeout": "5s", "dial_timeout": "500ms"},
		"token_keys": []map[string]any{{"id": "k1", "secret": testSecret}},
	}
}

// servers are the gateway's HTTP servers, "gw" on port (and "gw2" on port2, unless 0), its
// Setup run first (tb: the pool's).
func (c gatewayConfig) servers(tb testing.TB, port, port2 int) map[string]any {
	if c.Setup != nil {
		c.Setup(tb, &c)
	}
	h := map[string]any{"handler": "seckill_draw", "user": "{http.request.header.X-User-ID}", "cache_ttl": "50ms", "timeout": "10s"}
	for k, v := range c.Draw {
		h[k] = v
	}
	server := func(port int) map[string]any {
		var result []any
		if c.Result != "" {
			result = append(result, map[string]any{
				"match":  []any{map[string]any{"path": []string{"/seckill/*/draw/result"}}},
				"handle": []any{map[string]any{"handler": "static_response", "headers": map[string][]string{"Content-Type": {"application/json"}}, "body": c.Result}},
			})
		}
		return handlertest.Server(port, append(result,
			map[string]any{
				"match":  []any{map[string]any{"path": []string{"/seckill/*/draw", "/seckill/*/draw/challenge", "/seckill/*/challenge"}}},
				"handle": []any{h, map[string]any{"handler": "static_response", "status_code": 299, "body": "room"}},
			},
			map[string]any{"handle": []any{map[string]any{"handler": "static_response", "body": "ok"}}},
		)...)
	}
	servers := map[string]any{"gw": server(port)}
	if port2 != 0 {
		servers["gw2"] = server(port2)
	}
	return servers
}

var client = handlertest.NewClient(256)

// reply is one decoded answer of the draw.
type reply struct {
	Status int
	Retry  string
	StatusAnswer
	Code       string `json:"code"`
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
	Raw        string
}

func do(t testing.TB, method, url, user, body string, headers map[string]string) reply {
	t.Helper()
	var r reply
	r.Status, r.Retry, r.Raw = handlertest.Call(t, client, method, url, user, body, headers, &r)
	return r
}

func enter(t testing.TB, base, sale, user, variant string, headers map[string]string) reply {
	t.Helper()
	return do(t, http.MethodPost, base+"/seckill/"+sale+"/draw", user, `{"variant":"`+variant+`"}`, headers)
}

func withdraw(t testing.TB, base, sale, user string) reply {
	t.Helper()
	return do(t, http.MethodDelete, base+"/seckill/"+sale+"/draw", user, "", nil)
}

func status(t testing.TB, base, sale, user string) reply {
	t.Helper()
	return do(t, http.MethodGet, base+"/seckill/"+sale+"/draw", user, "", nil)
}

// counters reads the draw's n:<variant> fields and recounts them from the entries hash.
func counters(t testing.TB, rdb redis.UniversalClient, sale string) (stored, recounted map[string]int64) {
	t.Helper()
	ctx := context.Background()
	stored, recounted = map[string]int64{}, map[string]int64{}
	for f, v := range rdb.HGetAll(ctx, contract.DrawKey(sale)).Val() {
		if id, ok := strings.CutPrefix(f, "n:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("draw %s: %s is %q, not a count", sale, f, v)
			}
			if n != 0 {
				stored[id] = n
			}
		}
	}
	for _, v := range rdb.HGetAll(ctx, contract.DrawEntriesKey(sale)).Val() {
		p := strings.Split(v, ":")
		if len(p) == 2 {
			recounted[p[1]]++
		}
	}
	return stored, recounted
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
