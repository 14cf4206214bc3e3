//go:build integration

package room

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"

	_ "github.com/seckilledge/seckill/caddymodule/gate"
	_ "github.com/seckilledge/seckill/caddymodule/identity" // the verified session a room's lanes read (lane_claim)
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	_ "github.com/seckilledge/seckill/caddymodule/throttle" // the throttle the room reads bans of (ban_zones)
	_ "github.com/seckilledge/seckill/caddymodule/token"
)

// TestMain runs the package's tests with one chromium for all the browser tests
// (pagetest.Main: each test still has a profile of its own) and one Caddy for all the
// in-process gateways (gateways), stopped once they are done.
func TestMain(m *testing.M) {
	code := pagetest.Main(m)
	gateways.Stop()
	os.Exit(code)
}

// testSecret is a token key used only by these tests.
const testSecret = "room-test-secret-room-test-secret-0123456789"

// roomArgs are a sale's own room settings as room_setup.lua takes them ("" leaves the
// Caddyfile's default).
type roomArgs struct {
	Rate, Oversubscribe, SessionMS, PrequeueMS, DifficultyMin, DifficultyMax string
	MaxWaiters                                                               string
	// Lanes is the room hash's lanes field (room_setup.lua's ARGV[13]; "" none).
	Lanes string
	// Order, when set, accepts or refuses a drawn seed and entry key for the sale: newRoom
	// draws again until it accepts, so a test can ask for an order a random draw gives only
	// some of the time.
	Order func(sale string, seed, ekey []byte) bool
}

// testRoom is a preheated sale with a room.
type testRoom struct {
	Sale       string
	Seed       []byte
	Commitment string
}

// newRoom preheats a sale whose window is [now+startsIn, now+endsIn) and gives it a room, as
// the backend's preheat does: the room first, then the sale's meta, marked as a room sale.
func newRoom(t testing.TB, rdb redis.UniversalClient, stock int, startsIn, endsIn time.Duration, a roomArgs) testRoom {
	t.Helper()
	ctx := context.Background()
	sale := testenv.ID("r")
	now := time.Now()
	pre := lua.PreheatCall{Sale: sale, Stock: int64(stock), Starts: now.Add(startsIn), Ends: now.Add(endsIn),
		Retention: time.Hour, Room: true}
	seed, ekey := make([]byte, 32), make([]byte, 32)
	for draw := 0; ; draw++ {
		_, _ = rand.Read(seed)
		_, _ = rand.Read(ekey)
		if a.Order == nil || a.Order(sale, seed, ekey) {
			break
		}
		if draw == 10000 {
			t.Fatal("no seed in 10000 draws gives the order the test asks for")
		}
	}
	sum := sha256.Sum256(seed)
	commit := hex.EncodeToString(sum[:])
	if err := lua.RoomSetup.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.RoomKey(sale)},
		hex.EncodeToString(seed), hex.EncodeToString(ekey), a.Rate, a.Oversubscribe, a.SessionMS, a.PrequeueMS,
		a.DifficultyMin, a.DifficultyMax, commit, a.MaxWaiters, pre.Ends.Add(pre.Retention).UnixMilli(), pre.Stock, a.Lanes).Err(); err != nil {
		t.Fatalf("room_setup: %v", err)
	}
	if _, _, err := pre.Run(ctx, rdb); err != nil {
		t.Fatalf("preheat: %v", err)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), contract.MetaKey(sale), contract.BuyersKey(sale), contract.TokensKey(sale),
			contract.OutboxKey(sale), contract.RoomKey(sale), contract.RoomQueueKey(sale), contract.RoomLiveKey(sale), contract.RoomSpentKey(sale), contract.RoomKeysKey(sale))
	})
	return testRoom{Sale: sale, Seed: seed, Commitment: commit}
}

// gatewayConfig is a gateway serving the room, the token and the gate.
type gatewayConfig struct {
	Port int
	// Port2, when set, is a second server of the room's routes: its handler is another
	// instance (its own cache and views), as a second gateway's would be. A gateway of the
	// package's pool (gateway) has it when Two is set.
	Port2     int
	Two       bool
	RedisAddr string
	AMQPURL   string
	Room      map[string]any // extra fields of the seckill_room handler
	Token     map[string]any // extra fields of the seckill_token handler
	Gate      map[string]any // extra fields of the seckill_gate handler
	// Throttle, when set, is a seckill_throttle handler in front of the room on every server,
	// as in the shipped Caddyfiles.
	Throttle map[string]any
	// Identity, when set, is a seckill_identity handler in front of the room (and of the
	// throttle) on every server: the room then reads the verified session's placeholders.
	Identity map[string]any
	// Files are static files the first server also serves (path: content type, body).
	Files map[string][2]string
	// Setup, when set, completes a pool gateway's config when the pool is loaded (a stand-in
	// server it names): tb is the pool's, which keeps what it starts until the package's
	// tests end.
	Setup func(tb testing.TB, c *gatewayConfig)
}

func newGatewayConfig(t testing.TB, amqpURL string) gatewayConfig {
	return gatewayConfig{Port: testenv.FreePort(t), RedisAddr: testenv.RedisAddr(), AMQPURL: amqpURL}
}

func (c gatewayConfig) JSON() []byte {
	return handlertest.Config(appConfig(c.RedisAddr, c.AMQPURL), c.servers(nil, c.Port, c.Port2))
}

// appConfig is the seckill app of a gateway over Redis at redisAddr and RabbitMQ at amqpURL.
func appConfig(redisAddr, amqpURL string) map[string]any {
	return map[string]any{
		"redis":      map[string]any{"addrs": []string{redisAddr}, "read_timeout": "5s", "dial_timeout": "500ms"},
		"amqp":       map[string]any{"url": amqpURL, "reconnect_interval": "200ms"},
		"token_keys": []map[string]any{{"id": "k1", "secret": testSecret}},
		"relay":      map[string]any{"poll_interval": "50ms", "discover_interval": "300ms", "served_only": true},
	}
}

// servers are the gateway's HTTP servers, "gw" on port (and "gw2" on port2, unless 0), its
// Setup run first (tb: the pool's).
func (c gatewayConfig) servers(tb testing.TB, port, port2 int) map[string]any {
	if c.Setup != nil {
		c.Setup(tb, &c)
	}
	room := map[string]any{
		"handler": "seckill_room", "user": "{http.request.header.X-User-ID}",
		// Tests move the sale's window under the gateway's feet.
		"cache_ttl": "50ms",
		// Generous: -race on two busy cores.
		"timeout": "10s",
	}
	for k, v := range c.Room {
		room[k] = v
	}
	// The room's sales are sold only through handlers that check admissions, as in every
	// shipped Caddyfile (without it they refuse a room sale: misconfigured).
	token := map[string]any{"handler": "seckill_token", "user": "{http.request.header.X-User-ID}", "require_admission": true}
	for k, v := range c.Token {
		token[k] = v
	}
	gate := map[string]any{"handler": "seckill_gate", "user": "{http.request.header.X-User-ID}",
		"require_token": true, "require_admission": true, "timeout": "10s"}
	for k, v := range c.Gate {
		gate[k] = v
	}
	route := func(paths []string, h map[string]any) map[string]any {
		handle := []any{h}
		if c.Throttle != nil && h["handler"] == "seckill_room" {
			handle = []any{c.Throttle, h}
		}
		if c.Identity != nil && h["handler"] == "seckill_room" {
			handle = append([]any{c.Identity}, handle...)
		}
		return map[string]any{"match": []any{map[string]any{"path": paths}}, "handle": handle}
	}
	var routes []any
	for path, f := range c.Files {
		routes = append(routes, map[string]any{"match": []any{map[string]any{"path": []string{path}}},
			"handle": []any{map[string]any{"handler": "static_response", "body": f[1], "headers": map[string]any{"Content-Type": []string{f[0]}}}}})
	}
	roomPaths := []string{"/seckill/*/room", "/seckill/*/room/prequeue", "/seckill/*/challenge", "/seckill/*/queue"}
	routes = append(routes,
		route(roomPaths, room),
		route([]string{"/seckill/*/token"}, token),
		route([]string{"/seckill/*/buy"}, gate),
		map[string]any{"handle": []any{map[string]any{"handler": "static_response", "body": "ok"}}},
	)
	servers := map[string]any{"gw": handlertest.Server(port, routes...)}
	if port2 != 0 {
		servers["gw2"] = handlertest.Server(port2, route(roomPaths, room))
	}
	return servers
}

// gateways are the package's in-process gateways, one Caddy for all of them (Caddy is one
// per process): each test that needs its own settings declares its gateway (gateway) as a
// package variable, and the tests of a gateway are kept apart by their sales' ids, so they
// run side by side. Their RabbitMQ is a vhost of the package's own.
var gateways = &handlertest.Pool{App: func(tb testing.TB) map[string]any {
	poolAMQP = testenv.RabbitVhost(tb)
	return appConfig(testenv.RedisAddr(), poolAMQP)
}}

// poolAMQP is the pool's vhost, set when the pool is loaded: a second gateway of a test,
// run as another process, shares it.
var poolAMQP string

// plainGateway is a gateway of the pool with the handlers' test defaults.
var plainGateway = gateway(gatewayConfig{})

// gateway declares a gateway of the pool with c's settings (a second server when c.Two): call
// it from a package variable's initialiser. Its Base is its server's URL (Two: both servers'),
// the pool loaded at the first call.
func gateway(c gatewayConfig) *handlertest.PoolGateway { return gateways.Add(c.Two, c.servers) }

// secondProcess runs c as a second gateway in a Caddy subprocess until the test ends, on the
// pool's vhost: another process, as in production.
func secondProcess(t testing.TB, c gatewayConfig) string {
	t.Helper()
	gateways.Load(t)
	c.Port, c.RedisAddr, c.AMQPURL = testenv.FreePort(t), testenv.RedisAddr(), poolAMQP
	return startGatewayProcess(t, c)
}

// startGatewayProcess runs the config in a Caddy subprocess until the test ends: the second
// gateway is another process, as in production.
func startGatewayProcess(t testing.TB, c gatewayConfig) string {
	t.Helper()
	return handlertest.StartGateway(t, c.JSON(), handlertest.Base(c.Port)).Base
}

var client = handlertest.NewClient(512)

// reply is one decoded answer of the room.
type reply struct {
	Status int
	Retry  string
	core.QueueAnswer
	Code       string `json:"code"`
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
	Token      string `json:"token"`
	OrderID    string `json:"order_id"`
	Raw        string
}

func do(t testing.TB, method, url, user string, headers map[string]string) reply {
	t.Helper()
	var r reply
	r.Status, r.Retry, r.Raw = handlertest.Call(t, client, method, url, user, "", headers, &r)
	return r
}

func enter(t testing.TB, base, sale, user string, headers map[string]string) reply {
	t.Helper()
	return do(t, http.MethodPost, base+"/seckill/"+sale+"/queue", user, headers)
}

func poll(t testing.TB, base, sale, user, ticket string) reply {
	t.Helper()
	return do(t, http.MethodGet, base+"/seckill/"+sale+"/queue", user, map[string]string{sealed.HeaderTicket: ticket})
}

// redisNow is Redis's clock, which the scripts use.
func redisNow(t testing.TB, rdb redis.UniversalClient) time.Time {
	t.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
