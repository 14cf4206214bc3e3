//go:build integration

package throttle

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/caddymodule/throttle/core"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// server is one HTTP server of a test config: each throttle handler JSON gets the route
// /r<i>, answered "ok" when admitted.
type server struct {
	throttles []string
	trusted   []string // trusted_proxies ranges
	errRoutes bool     // handle_errors routes echoing the status
}

// startCaddy runs a real Caddy (in this process) with the seckill app on redisAddr and
// returns each server's base URL. The admin endpoint is off, so tests never fight over :2019.
func startCaddy(t *testing.T, redisAddr string, servers ...server) []string {
	t.Helper()
	if redisAddr == testenv.RedisAddr() {
		testenv.Redis(t) // the shared Redis must be up: a fail_open zone would hide its absence
	}
	srvs := map[string]any{}
	var bases []string
	for n, s := range servers {
		port := testenv.FreePort(t)
		var routes []any
		for i, th := range s.throttles {
			routes = append(routes, map[string]any{
				"match": []any{map[string]any{"path": []string{fmt.Sprintf("/r%d", i)}}},
				"handle": []any{json.RawMessage(th),
					map[string]any{"handler": "static_response", "body": "ok"}},
			})
		}
		cfg := map[string]any{"listen": []string{fmt.Sprintf("127.0.0.1:%d", port)}, "routes": routes}
		if s.trusted != nil {
			cfg["trusted_proxies"] = map[string]any{"source": "static", "ranges": s.trusted}
		}
		if s.errRoutes {
			cfg["errors"] = map[string]any{"routes": []any{map[string]any{"handle": []any{map[string]any{
				"handler": "static_response", "status_code": "{http.error.status_code}",
				"body": "handled {http.error.status_code}"}}}}}
		}
		srvs[fmt.Sprintf("s%d", n)] = cfg
		bases = append(bases, fmt.Sprintf("http://127.0.0.1:%d", port))
	}
	cfg := map[string]any{
		"admin":   map[string]any{"disabled": true},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
		"apps": map[string]any{
			"seckill": map[string]any{"redis": map[string]any{"addrs": []string{redisAddr}}},
			"http":    map[string]any{"servers": srvs},
		},
	}
	raw, _ := json.Marshal(cfg)
	if err := caddy.Load(raw, true); err != nil {
		t.Fatalf("load caddy: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	return bases
}

// throttleJSON is a seckill_throttle handler over zones. A test that is not about the timeout
// gets a 10 s one: on a loaded machine a Redis round trip under -race can pass the 100 ms
// default, and the zone's fail_open would then answer without counting or headers.
func throttleJSON(extra string, zones ...string) string {
	s := `{"handler":"seckill_throttle","zones":[` + strings.Join(zones, ",") + `]`
	if !strings.Contains(extra, `"timeout"`) {
		s += `,"timeout":10000000000`
	}
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestRefusalIsA429JSONWithRetryAfterAndRateLimitHeaders(t *testing.T) {
	zone := testenv.ID("user")
	base := startCaddy(t, testenv.RedisAddr(), server{throttles: []string{
		throttleJSON("", fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":2,"window":60000000000}`, zone)),
	}})[0]
	user := testenv.ID("u")
	for i := 0; i < 2; i++ {
		resp, body := get(t, base+"/r0", "X-User-ID", user)
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		if want := fmt.Sprintf("%q;q=2;w=60", zone); resp.Header.Get("RateLimit-Policy") != want {
			t.Fatalf("RateLimit-Policy = %q, want %q", resp.Header.Get("RateLimit-Policy"), want)
		}
		if want := fmt.Sprintf("%q;r=%d;", zone, 1-i); !strings.HasPrefix(resp.Header.Get("RateLimit"), want) {
			t.Fatalf("RateLimit = %q, want prefix %q", resp.Header.Get("RateLimit"), want)
		}
	}
	resp, body := get(t, base+"/r0", "X-User-ID", user)
	var ref contract.Refusal
	if resp.StatusCode != 429 || json.Unmarshal([]byte(body), &ref) != nil || ref.Code != contract.CodeRateLimited || ref.Message == "" {
		t.Fatalf("third request: %d %q, want 429 with JSON code rate_limited", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q, want 1..60 seconds", resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(resp.Header.Get("RateLimit"), ";r=0;") {
		t.Fatalf("RateLimit on a refusal = %q, want r=0", resp.Header.Get("RateLimit"))
	}
	// Another user is not affected, and a request without the key is not counted.
	if resp, _ := get(t, base+"/r0", "X-User-ID", testenv.ID("u")); resp.StatusCode != 200 {
		t.Fatalf("another user got %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/r0"); resp.StatusCode != 200 {
		t.Fatalf("a request with an empty key got %d", resp.StatusCode)
	}
}

func TestHandleErrorsModeGivesTheRefusalToErrorRoutes(t *testing.T) {
	zone := testenv.ID("z")
	base := startCaddy(t, testenv.RedisAddr(), server{errRoutes: true, throttles: []string{
		throttleJSON(`"handle_errors":true,"headers":"legacy"`, fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":1,"window":60000000000}`, zone)),
	}})[0]
	user := testenv.ID("u")
	if resp, _ := get(t, base+"/r0", "X-User-ID", user); resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("first request: %d, X-RateLimit-Remaining %q", resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"))
	}
	resp, body := get(t, base+"/r0", "X-User-ID", user)
	if resp.StatusCode != 429 || body != "handled 429" || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-RateLimit-Limit") != "1" {
		t.Fatalf("second request: %d %q headers %v, want the error route's answer with Retry-After", resp.StatusCode, body, resp.Header)
	}
}

func TestSpoofedForwardedForFromAnUntrustedPeerDoesNotChangeTheIPKey(t *testing.T) {
	zone := func() string {
		return throttleJSON("", fmt.Sprintf(`{"name":%q,"key":"{http.vars.client_ip}","limit":1,"window":60000000000}`, testenv.ID("ip")))
	}
	bases := startCaddy(t, testenv.RedisAddr(),
		server{throttles: []string{zone()}},                                    // no trusted proxies
		server{throttles: []string{zone()}, trusted: []string{"127.0.0.1/32"}}, // behind a trusted proxy
	)
	untrusted, trusted := bases[0], bases[1]
	if resp, _ := get(t, untrusted+"/r0", "X-Forwarded-For", "198.51.100.1"); resp.StatusCode != 200 {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	if resp, _ := get(t, untrusted+"/r0", "X-Forwarded-For", "198.51.100.2"); resp.StatusCode != 429 {
		t.Fatalf("a new X-Forwarded-For from an untrusted peer got %d, want 429: it must not make a new key", resp.StatusCode)
	}
	// Control: from a trusted proxy, the forwarded address is the client.
	if resp, _ := get(t, trusted+"/r0", "X-Forwarded-For", "198.51.100.1"); resp.StatusCode != 200 {
		t.Fatalf("trusted, first client: %d", resp.StatusCode)
	}
	if resp, _ := get(t, trusted+"/r0", "X-Forwarded-For", "198.51.100.2"); resp.StatusCode != 200 {
		t.Fatalf("trusted, second client: %d", resp.StatusCode)
	}
	if resp, _ := get(t, trusted+"/r0", "X-Forwarded-For", "198.51.100.1"); resp.StatusCode != 429 {
		t.Fatalf("trusted, first client again: %d", resp.StatusCode)
	}
}

func TestAllowListedRequestsAreNeverThrottled(t *testing.T) {
	zone := testenv.ID("z")
	z := fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":1,"window":60000000000}`, zone)
	base := startCaddy(t, testenv.RedisAddr(), server{throttles: []string{
		throttleJSON(`"allow":{"match":[{"header":{"X-Internal":["yes"]}}]}`, z),
		throttleJSON(`"allow":{"cidrs":["127.0.0.0/8"]}`, z),
	}})[0]
	user := testenv.ID("u")
	for i := 0; i < 3; i++ {
		if resp, _ := get(t, base+"/r0", "X-User-ID", user, "X-Internal", "yes"); resp.StatusCode != 200 {
			t.Fatalf("allow-listed by matcher: %d", resp.StatusCode)
		}
		if resp, _ := get(t, base+"/r1", "X-User-ID", user); resp.StatusCode != 200 {
			t.Fatalf("allow-listed by CIDR: %d", resp.StatusCode)
		}
	}
	get(t, base+"/r0", "X-User-ID", user)
	if resp, _ := get(t, base+"/r0", "X-User-ID", user); resp.StatusCode != 429 {
		t.Fatalf("not allow-listed: %d, want 429", resp.StatusCode)
	}
}

// TestTwoGatewayInstancesAdmitOneCombinedLimit runs one real Caddy (HTTP) and a second,
// separately provisioned handler instance (its own local tiers, served through ServeHTTP)
// on the same Redis: Caddy is a singleton per process, so the second instance is the
// handler itself.
func TestTwoGatewayInstancesAdmitOneCombinedLimit(t *testing.T) {
	const limit = 20
	zone := fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":%d,"window":60000000000}`, testenv.ID("user"), limit)
	base := startCaddy(t, testenv.RedisAddr(), server{throttles: []string{throttleJSON("", zone)}})[0]

	second := new(Handler)
	if err := json.Unmarshal([]byte(throttleJSON("", zone)), second); err != nil {
		t.Fatal(err)
	}
	if err := second.Provision(caddy.ActiveContext()); err != nil {
		t.Fatal(err)
	}
	if err := second.Validate(); err != nil {
		t.Fatal(err)
	}
	ok := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { _, err := io.WriteString(w, "ok"); return err })
	user := testenv.ID("u")
	var viaCaddy, viaSecond atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				if g%2 == 0 {
					resp, _ := get(t, base+"/r0", "X-User-ID", user)
					if resp.StatusCode == 200 {
						viaCaddy.Add(1)
					}
					continue
				}
				req := httptest.NewRequest(http.MethodPost, "/r0", nil)
				req.Header.Set("X-User-ID", user)
				rec := httptest.NewRecorder()
				req = caddyhttp.PrepareRequest(req, caddy.NewReplacer(), rec, nil)
				if err := second.ServeHTTP(rec, req, ok); err != nil {
					t.Error(err)
				}
				if rec.Code == 200 {
					viaSecond.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	a, b := viaCaddy.Load(), viaSecond.Load()
	if a+b != limit {
		t.Fatalf("instances admitted %d + %d = %d, want a combined %d", a, b, a+b, limit)
	}
}

func TestRedisDownFailOpenAdmitsAndCountsFailClosedAnswers503(t *testing.T) {
	srv := testenv.StartRedis(t)
	open, closed := testenv.ID("open"), testenv.ID("closed")
	base := startCaddy(t, srv.Addr(), server{throttles: []string{
		throttleJSON(`"timeout":200000000`, fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":100,"window":60000000000}`, open)),
		throttleJSON(`"timeout":200000000`, fmt.Sprintf(`{"name":%q,"key":"{http.request.header.X-User-ID}","limit":100,"window":60000000000,"on_failure":"fail_closed"}`, closed)),
	}})[0]
	user := testenv.ID("u")
	for _, p := range []string{"/r0", "/r1"} {
		if resp, _ := get(t, base+p, "X-User-ID", user); resp.StatusCode != 200 {
			t.Fatalf("%s with Redis up: %d", p, resp.StatusCode)
		}
	}
	srv.Kill()
	failedOpen := decisions.WithLabelValues(open, string(core.FailedOpen))
	before := testutil.ToFloat64(failedOpen)
	if resp, body := get(t, base+"/r0", "X-User-ID", user); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("fail_open zone with Redis down: %d %q", resp.StatusCode, body)
	}
	if got := testutil.ToFloat64(failedOpen) - before; got != 1 {
		t.Fatalf("failed_open counted %v times, want 1", got)
	}
	resp, body := get(t, base+"/r1", "X-User-ID", user)
	var ref contract.Refusal
	if resp.StatusCode != 503 || json.Unmarshal([]byte(body), &ref) != nil || ref.Code != contract.CodeUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fail_closed zone with Redis down: %d %q Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if got := testutil.ToFloat64(decisions.WithLabelValues(closed, string(core.FailedClosed))); got < 1 {
		t.Fatal("failed_closed not counted")
	}
	if testutil.CollectAndCount(redisSeconds) == 0 {
		t.Fatal("no Redis latency recorded")
	}
}

// provisionSecond provisions a handler on the running Caddy's context (shared seckill app).
func provisionSecond(t *testing.T, raw string) *Handler {
	t.Helper()
	h := new(Handler)
	if err := json.Unmarshal([]byte(raw), h); err != nil {
		t.Fatal(err)
	}
	if err := h.Provision(caddy.ActiveContext()); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(t *testing.T, h *Handler, remote string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/seckill/s/buy", nil)
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	req = caddyhttp.PrepareRequest(req, caddy.NewReplacer(), rec, nil)
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
	if err := h.ServeHTTP(rec, req, next); err != nil {
		t.Fatal(err)
	}
	return rec.Code
}

func TestIPv6ClientsOfOneSubnetShareAKey(t *testing.T) {
	startCaddy(t, testenv.RedisAddr(), server{})
	h := provisionSecond(t, throttleJSON("", fmt.Sprintf(`{"name":%q,"key":"{http.vars.client_ip}","limit":1,"window":60000000000,"ipv4_prefix":24}`, testenv.ID("ip"))))
	// The zone is fresh (unique name), so fixed addresses do not collide with other runs.
	for _, c := range []struct {
		remote string
		want   int
	}{
		{"[2001:db8:1:2::1]:4000", 200},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:4000", 429}, // same /64: same key
		{"[2001:db8:1:3::1]:4000", 200},                  // next /64: its own key
		{"10.1.2.1:4000", 200},
		{"10.1.2.200:4000", 429}, // same /24
		{"10.1.3.1:4000", 200},
	} {
		if code := serve(t, h, c.remote); code != c.want {
			t.Fatalf("%s: got %d, want %d", c.remote, code, c.want)
		}
	}
	if st := h.Limiter().Status(); len(st) != 1 || st[0].Blocklisted != 2 {
		t.Fatalf("status = %+v, want one zone with 2 blocklisted keys", st)
	}
}
