//go:build integration

package conformance

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/examples/shop"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"

	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/seckilledge/seckill"
)

// BenchmarkGatewayChainAllocs is the cost per request of the demo Caddyfile's chains, in
// allocations: the shipped file runs in this process (as seckill-bench moves it: its own ports,
// the ceiling site answering a bare `respond`, clients behind a trusted loopback proxy) on a
// private Redis, and each request goes straight to the server's ServeHTTP, so what is counted
// is Caddy's request handling and ours, not the connection's reading and writing (the same for
// every route). The cases are the seckill-bench ones: the ceiling (`respond`), a purchase
// token, a purchase with a valid token (accepted: throttle, gate, the 202), and a click on a
// sold-out sale by a user who clicked there before (the flood after the sell-out); each with the
// Caddyfile as shipped, without the global `metrics` option, with it and `per_host`, with the
// site's routes wrapped in one `handle` (one instrumented top-level route per request instead of
// two, but Caddy then compiles the subroute's chain on every request: it costs more than it
// saves), and with the token, purchase and room routes after the backend's (guardsFirst).
//
//	go test -tags integration -run '^$' -bench GatewayChainAllocs -benchmem -benchtime 2000x ./internal/conformance/
//
// Allocations (allocs/op, B/op) are the figures to read: they do not depend on the machine's
// load. Background work (the relay's polls, go-redis) is counted too, so they wobble by a few
// allocations per thousand requests.
func BenchmarkGatewayChainAllocs(b *testing.B) {
	if testing.Short() {
		b.Skip("integration: needs a private redis-server")
	}
	src, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		b.Fatal(err)
	}
	rdb := testenv.StartRedis(b)
	b.Setenv("SECKILL_REDIS_ADDR", rdb.Addr())
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b.Setenv("SECKILL_TOKEN_KEY", hex.EncodeToString(key))
	b.Setenv("SECKILL_NAMESPACE", testenv.ID("bench-"))
	// Users are numbered across the variants: they share the Redis, and a user of one variant
	// asking again in the next (within the user zone's second) would be throttled.
	user := 0
	for _, v := range []struct {
		name string
		edit func(string) string
	}{
		{"shipped", func(s string) string { return s }},
		{"no_metrics", func(s string) string { return globalMetrics.ReplaceAllString(s, "") }},
		{"per_host", func(s string) string { return globalMetrics.ReplaceAllString(s, "\tmetrics {\n\t\tper_host\n\t}\n") }},
		{"one_route", oneRoute},
		{"guards_first", guardsFirst},
	} {
		gw, ceil := startChain(b, v.edit(string(src)))
		sale := testenv.ID("bench")
		if _, _, err := (lua.PreheatCall{
			Sale: sale, Stock: 1 << 30, Starts: time.Now().Add(-time.Minute), Ends: time.Now().Add(time.Hour),
			Retention: time.Hour}).Run(context.Background(), redisClient(b, rdb.Addr())); err != nil {
			b.Fatal(err)
		}
		b.Run(v.name+"/respond", func(b *testing.B) {
			serve(b, ceil, func(int) *http.Request { return clientRequest(http.MethodGet, "/", 0) }, http.StatusOK)
		})
		b.Run(v.name+"/token", func(b *testing.B) {
			serve(b, gw, func(int) *http.Request {
				user++
				return clientRequest(http.MethodPost, "/seckill/"+sale+"/token", user)
			}, http.StatusOK)
		})
		b.Run(v.name+"/buy", func(b *testing.B) {
			// The tokens first, off the clock: the page load before the click.
			tokens := make([]string, b.N)
			first := user + 1
			for i := range tokens {
				user++
				w := newWriter()
				gw.ServeHTTP(w, clientRequest(http.MethodPost, "/seckill/"+sale+"/token", user))
				var t struct{ Token string }
				if w.status != http.StatusOK || json.Unmarshal(w.body, &t) != nil {
					b.Fatalf("token: %d %s", w.status, w.body)
				}
				tokens[i] = t.Token
			}
			serve(b, gw, func(i int) *http.Request {
				r := clientRequest(http.MethodPost, "/seckill/"+sale+"/buy", first+i)
				r.Header.Set("X-Seckill-Token", tokens[i])
				return r
			}, http.StatusAccepted)
		})
		b.Run(v.name+"/sold_out", func(b *testing.B) {
			// The flood after the sell-out: users who clicked once already (their first late
			// click reads the buyers hash once, off the clock) click again, without a token.
			soldOut := testenv.ID("gone")
			if _, _, err := (lua.PreheatCall{
				Sale: soldOut, Stock: 1, Starts: time.Now().Add(-time.Minute), Ends: time.Now().Add(time.Hour),
				Retention: time.Hour}).Run(context.Background(), redisClient(b, rdb.Addr())); err != nil {
				b.Fatal(err)
			}
			// Two buyers for one unit: the second one's answer is the gateway's sold-out flag.
			user += 2
			sellOut(b, gw, soldOut, user-1, user)
			first := user + 1
			for i := range b.N {
				user++
				w := newWriter()
				gw.ServeHTTP(w, clientRequest(http.MethodPost, "/seckill/"+soldOut+"/buy", first+i))
				if w.status != http.StatusConflict {
					b.Fatalf("first late click: %d %s", w.status, w.body)
				}
			}
			serve(b, gw, func(i int) *http.Request {
				return clientRequest(http.MethodPost, "/seckill/"+soldOut+"/buy", first+i)
			}, http.StatusConflict)
		})
		stopChain()
	}
}

// sellOut has users a and b take a token each, then buy the last unit of sale in turn: a wins,
// b is answered sold_out by the script, and the gateway flags the sale sold out.
func sellOut(b testing.TB, gw http.Handler, sale string, a, bu int) {
	b.Helper()
	var tokens [2]string
	for i, u := range []int{a, bu} {
		w := newWriter()
		gw.ServeHTTP(w, clientRequest(http.MethodPost, "/seckill/"+sale+"/token", u))
		var t struct{ Token string }
		if w.status != http.StatusOK || json.Unmarshal(w.body, &t) != nil {
			b.Fatalf("token: %d %s", w.status, w.body)
		}
		tokens[i] = t.Token
	}
	for i, u := range []int{a, bu} {
		w := newWriter()
		r := clientRequest(http.MethodPost, "/seckill/"+sale+"/buy", u)
		r.Header.Set("X-Seckill-Token", tokens[i])
		gw.ServeHTTP(w, r)
		if want := []int{http.StatusAccepted, http.StatusConflict}[i]; w.status != want {
			b.Fatalf("buy %d: %d %s, want %d", i, w.status, w.body, want)
		}
	}
}

// guardsFirst moves the :8080 site's token, purchase and room routes after its other handle
// blocks, as a site written without regard to the order would have them: a purchase then
// evaluates the expression matchers (CEL, regular expressions) and path globs of the backend's
// routes before its own (docs/gate.md, "One handler per purchase").
func guardsFirst(s string) string {
	site := strings.Index(s, "\n:8080 {\n")
	start := site + strings.Index(s[site:], "\t# The token, the purchase and the room come first")
	end := site + strings.Index(s[site:], "\t# /orders/ paths in canonical form only")
	health := site + strings.Index(s[site:], "\thandle {$SECKILL_HEALTH_PATH:/healthz} {\n")
	if start < site || end < start || health < end {
		panic("the :8080 site's routes are not in the order guardsFirst expects")
	}
	return s[:start] + s[end:health] + s[start:end] + s[health:]
}

// oneRoute wraps the :8080 site's routes (handle_errors apart) in one handle block.
func oneRoute(s string) string {
	s = strings.Replace(s, "\n:8080 {\n", "\n:8080 {\nhandle {\n", 1)
	return strings.Replace(s, "\n\thandle_errors {", "\n}\n\thandle_errors {", 1)
}

// globalMetrics is the `metrics` line of the global options.
var globalMetrics = regexp.MustCompile(`(?m)^\tmetrics\n`)

// serve sends b.N requests made by req to h (made before the clock starts) and checks each
// answer's status.
func serve(b *testing.B, h http.Handler, req func(i int) *http.Request, want int) {
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		reqs[i] = req(i)
	}
	w := newWriter()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.reset()
		h.ServeHTTP(w, reqs[i])
		if w.status != want {
			b.Fatalf("request %d: %d %s", i, w.status, w.body)
		}
	}
}

// clientRequest is a request of simulated client n (0: the same one every time), from a load
// balancer on loopback that names the client in X-Forwarded-For, as in seckill-bench.
func clientRequest(method, path string, n int) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "127.0.0.1:40000"
	r.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255))
	r.Header.Set("X-User-ID", "u"+strconv.Itoa(n))
	return r
}

// writer is a response writer that keeps the status and the body, reused between requests.
type writer struct {
	h      http.Header
	status int
	body   []byte
}

func newWriter() *writer { return &writer{h: http.Header{}} }

func (w *writer) reset() {
	clear(w.h)
	w.status, w.body = 0, w.body[:0]
}

func (w *writer) Header() http.Header { return w.h }

// SetWriteDeadline and SetReadDeadline are what a connection's writer offers Caddy's write and
// read timeouts (http.ResponseController): without them each request would count the
// "not supported" errors a real connection never makes.
func (w *writer) SetWriteDeadline(time.Time) error { return nil }
func (w *writer) SetReadDeadline(time.Time) error  { return nil }

func (w *writer) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// startChain runs the Caddyfile src in this process, moved as seckill-bench moves it, and
// returns the gateway's server and the ceiling's.
func startChain(b testing.TB, src string) (gw, ceil http.Handler) {
	b.Helper()
	gport, admin, cport := testenv.FreePort(b), testenv.FreePort(b), testenv.FreePort(b)
	moved, err := harness.GatewayConfig(src, gport, admin, cport, harness.TrustLoopbackProxy)
	if err != nil {
		b.Fatal(err)
	}
	servers := loadChain(b, moved)
	gw, ceil = servers[gport], servers[cport]
	if gw == nil || ceil == nil {
		b.Fatal("the gateway's or the ceiling's server is missing")
	}
	return gw, ceil
}

// loadChain loads the Caddyfile src in this process (no admin endpoint, errors only in the log)
// and returns its servers by port.
func loadChain(b testing.TB, src string) map[int]http.Handler {
	b.Helper()
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		b.Fatal(err)
	}
	m["admin"] = map[string]any{"disabled": true}
	m["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}}
	cfg, _ = json.Marshal(m)
	if err := caddy.Load(cfg, true); err != nil {
		b.Fatal(err)
	}
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		b.Fatal(err)
	}
	servers := map[int]http.Handler{}
	for _, s := range app.(*caddyhttp.App).Servers {
		for _, l := range s.Listen {
			if n, err := strconv.Atoi(l[strings.LastIndex(l, ":")+1:]); err == nil {
				servers[n] = s
			}
		}
	}
	return servers
}

func stopChain() { _ = caddy.Stop() }

func redisClient(b testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// scriptCalls is the Redis's count of script calls (EVALSHA and EVAL) so far.
func scriptCalls(t testing.TB, c *redis.Client) int {
	t.Helper()
	info := c.Info(context.Background(), "commandstats").Val()
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
			_, rest, _ := strings.Cut(line, "calls=")
			v, _, _ := strings.Cut(rest, ",")
			k, _ := strconv.Atoi(v)
			n += k
		}
	}
	return n
}

// The production site as shipped (:8088, the buyer known by the shop's signed session) decides a
// purchase token and a purchase in one route and one script call each: the session is checked,
// then the throttle's zones (IP, device and the user's) run inside the token's or the gate's
// own script call. The shop's keys come from a stand-in JWKS endpoint; the relay is off.
func TestTheShippedShopSiteDecidesATokenAndAPurchaseInOneScriptCallEach(t *testing.T) {
	src, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	key, err := shop.LoadOrCreateKey("")
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sessions(t, key).JWKS())
	}))
	t.Cleanup(jwks.Close)
	rdb := testenv.StartRedis(t)
	t.Setenv("SECKILL_REDIS_ADDR", rdb.Addr())
	tk := make([]byte, 32)
	_, _ = rand.Read(tk)
	t.Setenv("SECKILL_TOKEN_KEY", hex.EncodeToString(tk))
	t.Setenv("SECKILL_NAMESPACE", testenv.ID("onecall-shop-"))
	t.Setenv("SECKILL_SHOP", strings.TrimPrefix(jwks.URL, "http://"))
	t.Setenv("SECKILL_SHOP_PUBLIC_URL", issuer)
	relay := regexp.MustCompile(`(?m)^\t\trelay \{\n\t\t\tpoll_interval 100ms\n\t\t\}`)
	port, admin := testenv.FreePort(t), testenv.FreePort(t)
	moved, err := harness.ShopGatewayConfig(relay.ReplaceAllString(string(src), "\t\trelay {\n\t\t\tdisabled\n\t\t}"), port, admin)
	if err != nil {
		t.Fatal(err)
	}
	gw := loadChain(t, moved)[port]
	t.Cleanup(stopChain)
	if gw == nil {
		t.Fatal("the shop site's server is missing")
	}
	c := redisClient(t, rdb.Addr())
	ctx := context.Background()
	sale := testenv.ID("one")
	if _, _, err := (lua.PreheatCall{Sale: sale, Stock: 100, Starts: time.Now().Add(-time.Minute),
		Ends: time.Now().Add(time.Hour), Retention: time.Hour}).Run(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*redis.Script{lua.GateThrottled, lua.GateCommonThrottled, lua.TokenIssueThrottled, lua.Gate, lua.GateCommon, lua.TokenIssue, lua.Throttle} {
		if err := s.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	signed := func(method, path string, u int) *http.Request {
		r := clientRequest(method, path, u)
		r.Header.Del("X-User-ID")
		tok, err := sessions(t, key).Issue("u"+strconv.Itoa(u), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		r.AddCookie(&http.Cookie{Name: "seckill_session", Value: tok})
		return r
	}
	// The identity loads the shop's keys in the background: the first session is believed
	// once they are there.
	testenv.WaitFor(t, 10*time.Second, "the shop's keys loaded", func() bool {
		w := newWriter()
		gw.ServeHTTP(w, signed(http.MethodGet, "/seckill/"+sale+"/nothing", 0))
		return w.status == http.StatusNotFound
	})
	const buyers = 5
	before := scriptCalls(t, c)
	for u := 1; u <= buyers; u++ {
		w := newWriter()
		gw.ServeHTTP(w, signed(http.MethodPost, "/seckill/"+sale+"/token", u))
		var tok struct{ Token string }
		if w.status != http.StatusOK || json.Unmarshal(w.body, &tok) != nil {
			t.Fatalf("token: %d %s", w.status, w.body)
		}
		if w.h.Get("RateLimit-Policy") == "" {
			t.Fatalf("the token's answer has no RateLimit-Policy: the throttle did not run (%v)", w.h)
		}
		w = newWriter()
		r := signed(http.MethodPost, "/seckill/"+sale+"/buy", u)
		r.Header.Set("X-Seckill-Token", tok.Token)
		gw.ServeHTTP(w, r)
		if w.status != http.StatusAccepted || !strings.Contains(w.h.Get("RateLimit-Policy"), `"user"`) {
			t.Fatalf("buy: %d %s %v, want 202 with the user zone's policy", w.status, w.body, w.h)
		}
	}
	if n := scriptCalls(t, c) - before; n != 2*buyers {
		t.Fatalf("%d script calls for %d tokens and %d purchases, want %d (one each)", n, buyers, buyers, 2*buyers)
	}
	// Without a session, nothing is decided and Redis is not asked.
	before = scriptCalls(t, c)
	w := newWriter()
	gw.ServeHTTP(w, clientRequest(http.MethodPost, "/seckill/"+sale+"/buy", 99))
	if w.status != http.StatusUnauthorized || scriptCalls(t, c) != before {
		t.Fatalf("a purchase without a session: %d %s, %d script calls, want 401 and none", w.status, w.body, scriptCalls(t, c)-before)
	}
}

// issuer is the shop's public URL in TestTheShippedShopSiteDecidesATokenAndAPurchaseInOneScriptCallEach.
const issuer = "http://localhost:8088"

func sessions(t testing.TB, key *ecdsa.PrivateKey) *shop.Sessions {
	s, err := shop.NewSessions(key, issuer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The demo site as shipped decides a purchase token and a purchase in one script call each:
// its token and purchase routes have the throttle right before the issuer and the gate
// (docs/throttle.md, "One round trip with the gate"). Counted by the private Redis's
// commandstats; the relay is off, so that its acknowledgements (a script too) stay out.
func TestTheShippedDemoSiteDecidesATokenAndAPurchaseInOneScriptCallEach(t *testing.T) {
	src, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	relay := regexp.MustCompile(`(?m)^\t\trelay \{\n\t\t\tpoll_interval 100ms\n\t\t\}`)
	if !relay.Match(src) {
		t.Fatal("the Caddyfile's relay block is not where this test turns it off")
	}
	rdb := testenv.StartRedis(t)
	t.Setenv("SECKILL_REDIS_ADDR", rdb.Addr())
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	t.Setenv("SECKILL_TOKEN_KEY", hex.EncodeToString(key))
	t.Setenv("SECKILL_NAMESPACE", testenv.ID("onecall-"))
	gw, _ := startChain(t, relay.ReplaceAllString(string(src), "\t\trelay {\n\t\t\tdisabled\n\t\t}"))
	t.Cleanup(stopChain)
	c := redisClient(t, rdb.Addr())
	ctx := context.Background()
	sale := testenv.ID("one")
	if _, _, err := (lua.PreheatCall{Sale: sale, Stock: 100, Starts: time.Now().Add(-time.Minute),
		Ends: time.Now().Add(time.Hour), Retention: time.Hour}).Run(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*redis.Script{lua.GateThrottled, lua.GateCommonThrottled, lua.TokenIssueThrottled, lua.Gate, lua.GateCommon, lua.TokenIssue, lua.Throttle} {
		if err := s.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	scripts := func() int {
		info := c.Info(ctx, "commandstats").Val()
		n := 0
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
				_, rest, _ := strings.Cut(line, "calls=")
				v, _, _ := strings.Cut(rest, ",")
				k, _ := strconv.Atoi(v)
				n += k
			}
		}
		return n
	}
	const buyers = 5
	before := scripts()
	for u := 1; u <= buyers; u++ {
		w := newWriter()
		gw.ServeHTTP(w, clientRequest(http.MethodPost, "/seckill/"+sale+"/token", u))
		var tok struct{ Token string }
		if w.status != http.StatusOK || json.Unmarshal(w.body, &tok) != nil {
			t.Fatalf("token: %d %s", w.status, w.body)
		}
		if w.h.Get("RateLimit-Policy") == "" {
			t.Fatalf("the token's answer has no RateLimit-Policy: the throttle did not run (%v)", w.h)
		}
		w = newWriter()
		r := clientRequest(http.MethodPost, "/seckill/"+sale+"/buy", u)
		r.Header.Set("X-Seckill-Token", tok.Token)
		gw.ServeHTTP(w, r)
		if w.status != http.StatusAccepted || w.h.Get("RateLimit-Policy") == "" {
			t.Fatalf("buy: %d %s %v", w.status, w.body, w.h)
		}
	}
	if n := scripts() - before; n != 2*buyers {
		t.Fatalf("%d script calls for %d tokens and %d purchases, want %d (one each)", n, buyers, buyers, 2*buyers)
	}
}

// commandCalls is how many commands the Redis has run, INFO and PING apart (the test's own
// reads, the event subscription's health checks); a script's own calls count too.
func commandCalls(t testing.TB, c *redis.Client) int {
	t.Helper()
	info := c.Info(context.Background(), "commandstats").Val()
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" || name == "cmdstat_ping" {
			continue
		}
		_, rest, _ = strings.Cut(rest, "calls=")
		v, _, _ := strings.Cut(rest, ",")
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

// On the demo site as shipped, the flood after the sell-out reaches no script: once the gateway
// knows the sale is sold out, a user's first late click reads the buyers hash once and his
// later ones cost Redis no command at all, throttle included (docs/throttle.md, "Answered from
// memory"). The relay is off, so that its polls stay out of the count.
func TestTheShippedDemoSiteAnswersTheFloodAfterTheSellOutWithoutRedis(t *testing.T) {
	src, err := os.ReadFile("../../Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	relay := regexp.MustCompile(`(?m)^\t\trelay \{\n\t\t\tpoll_interval 100ms\n\t\t\}`)
	rdb := testenv.StartRedis(t)
	t.Setenv("SECKILL_REDIS_ADDR", rdb.Addr())
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	t.Setenv("SECKILL_TOKEN_KEY", hex.EncodeToString(key))
	t.Setenv("SECKILL_NAMESPACE", testenv.ID("flood-"))
	gw, _ := startChain(t, relay.ReplaceAllString(string(src), "\t\trelay {\n\t\t\tdisabled\n\t\t}"))
	t.Cleanup(stopChain)
	c := redisClient(t, rdb.Addr())
	sale := testenv.ID("gone")
	if _, _, err := (lua.PreheatCall{Sale: sale, Stock: 1, Starts: time.Now().Add(-time.Minute),
		Ends: time.Now().Add(time.Hour), Retention: time.Hour}).Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	sellOut(t, gw, sale, 1, 2)
	const users = 20
	click := func(u int) {
		w := newWriter()
		gw.ServeHTTP(w, clientRequest(http.MethodPost, "/seckill/"+sale+"/buy", 100+u))
		if w.status != http.StatusConflict || !strings.Contains(string(w.body), `"sold_out"`) {
			t.Fatalf("late click of user %d: %d %s, want 409 sold_out", u, w.status, w.body)
		}
	}
	before, scripts := commandCalls(t, c), scriptCalls(t, c)
	for u := range users {
		click(u)
	}
	if n, s := commandCalls(t, c)-before, scriptCalls(t, c)-scripts; n != users || s != 0 {
		t.Fatalf("%d first late clicks: %d commands, %d scripts; want one read each and no script", users, n, s)
	}
	before = commandCalls(t, c)
	for range 2 {
		for u := range users {
			click(u)
		}
	}
	if n := commandCalls(t, c) - before; n != 0 {
		t.Fatalf("%d repeated late clicks ran %d commands in Redis, want none", 2*users, n)
	}
}
