//go:build integration

package token

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
	"github.com/seckilledge/seckill/lua"
)

var testKey = tokenformat.Key{ID: "k1", Secret: []byte("test-key-0123456789-0123456789-0123456789")}

func testRing(t testing.TB, keys ...tokenformat.Key) *tokenformat.Keyring {
	t.Helper()
	if len(keys) == 0 {
		keys = []tokenformat.Key{testKey}
	}
	kr, err := tokenformat.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// newIssuer is the handler as Provision leaves it, on the given Redis, reading the user from
// X-User-ID as the demo Caddyfile does.
func newIssuer(t testing.TB, rdb redis.Scripter, kr *tokenformat.Keyring, ttl, lead time.Duration) *Issuer {
	t.Helper()
	l := caddy.Duration(lead)
	h := &Issuer{Subject: handler.Subject{User: "{http.request.header.X-User-ID}"}, TTL: caddy.Duration(ttl), LeadTime: &l, logger: zap.NewNop()}
	h.setup(rdb, kr)
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	return h
}

// preheat loads a sale into Redis the way the backend does.
func preheat(t testing.TB, rdb redis.Scripter, sale string, starts, ends time.Time) {
	t.Helper()
	err := lua.Preheat.Run(context.Background(), rdb, []string{contract.MetaKey(sale)},
		sale, 10, starts.UnixMilli(), ends.UnixMilli(), "init", (10 * time.Minute).Milliseconds()).Err()
	if err != nil {
		t.Fatal(err)
	}
}

type answer struct {
	status int
	header http.Header
	body   map[string]string
	raw    string
}

func ask(t testing.TB, h *Issuer, method, path, user string) answer {
	t.Helper()
	req := httptest.NewRequest(method, "http://gw.test"+path, nil)
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	caddyhttp.NewTestReplacer(req)
	rec := httptest.NewRecorder()
	if err := h.ServeHTTP(rec, req, nil); err != nil {
		t.Fatalf("ServeHTTP returned %v", err)
	}
	a := answer{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.body); err != nil {
		t.Fatalf("%d body is not JSON: %q", rec.Code, rec.Body.String())
	}
	return a
}

func tokenPath(sale string) string { return "/seckill/" + sale + "/token" }

func TestIssuingRefusesUnknownSalesEarlyAndLateRequestsAndAnonymousUsers(t *testing.T) {
	rdb := testenv.Redis(t)
	h := newIssuer(t, rdb, testRing(t), time.Minute, 5*time.Minute)
	now := time.Now()
	later, over, open := testenv.ID("later"), testenv.ID("over"), testenv.ID("open")
	preheat(t, rdb, later, now.Add(10*time.Minute), now.Add(time.Hour))
	preheat(t, rdb, over, now.Add(-time.Hour), now.Add(-time.Second))
	preheat(t, rdb, open, now.Add(-time.Minute), now.Add(time.Hour))

	cases := []struct {
		name, method, path, user string
		status                   int
		code                     string
	}{
		{"unknown sale", "POST", tokenPath(testenv.ID("nosuch")), "alice", 404, contract.CodeUnknownSale},
		{"earlier than the lead time", "POST", tokenPath(later), "alice", 403, contract.CodeNotStarted},
		{"after the end", "POST", tokenPath(over), "alice", 403, contract.CodeEnded},
		{"no user id", "POST", tokenPath(open), "", 401, contract.CodeUnauthenticated},
		{"bad sale id", "POST", "/seckill/bad%20sale/token", "alice", 400, contract.CodeBadRequest},
		{"sale id too long", "POST", tokenPath(strings.Repeat("s", 65)), "alice", 400, contract.CodeBadRequest},
		{"bad user id", "POST", tokenPath(open), "al:ice", 400, contract.CodeBadRequest},
		{"GET", "GET", tokenPath(open), "alice", 405, contract.CodeBadRequest},
	}
	for _, tc := range cases {
		a := ask(t, h, tc.method, tc.path, tc.user)
		if a.status != tc.status || a.body["code"] != tc.code || a.body["message"] == "" {
			t.Errorf("%s: %d %s, want %d %s", tc.name, a.status, a.raw, tc.status, tc.code)
		}
	}
	for _, sale := range []string{later, over} {
		if n := rdb.Exists(context.Background(), contract.TokensKey(sale)).Val(); n != 0 {
			t.Errorf("a refused request wrote the tokens hash of %s", sale)
		}
	}
	if a := ask(t, h, "POST", tokenPath(open), "alice"); a.status != 200 {
		t.Fatalf("open sale: %d %s", a.status, a.raw)
	}
}

func TestATokenTakenBeforeTheStartLivesFromTheStartAndIsRecordedForTheGate(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	kr := testRing(t)
	h := newIssuer(t, rdb, kr, time.Minute, 5*time.Minute)
	sale, user := testenv.ID("s"), testenv.ID("u")
	starts := time.Now().Add(2 * time.Minute).Truncate(time.Millisecond)
	ends := starts.Add(time.Hour)
	preheat(t, rdb, sale, starts, ends)

	a := ask(t, h, "POST", tokenPath(sale), user)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Error("a token response must not be cached")
	}
	exp, err := time.Parse(time.RFC3339, a.body["expires_at"])
	if err != nil {
		t.Fatal(err)
	}
	if want := starts.Add(time.Minute).Truncate(time.Second); !exp.Equal(want) {
		t.Fatalf("expires_at %v, want start + ttl = %v", exp, want)
	}
	c, err := kr.Verify(a.body["token"], sale, user, starts)
	if err != nil {
		t.Fatalf("the issued token does not verify at the start of the sale: %v", err)
	}
	if !c.Expires.Equal(exp) {
		t.Fatalf("token expiry %v, body says %v", c.Expires, exp)
	}
	if got := rdb.HGet(ctx, contract.TokensKey(sale), user).Val(); got != tokenformat.StoreValue(c) {
		t.Fatalf("tokens hash holds %q, the gate expects %q", got, tokenformat.StoreValue(c))
	}
	metaAt := rdb.PExpireTime(ctx, contract.MetaKey(sale)).Val()
	if at := rdb.PExpireTime(ctx, contract.TokensKey(sale)).Val(); at <= 0 || at != metaAt {
		t.Fatalf("tokens hash expires at %v, the sale's meta at %v: it must expire with the sale", at, metaAt)
	}
}

func TestATokenNeverOutlivesTheSale(t *testing.T) {
	rdb := testenv.Redis(t)
	kr := testRing(t)
	h := newIssuer(t, rdb, kr, time.Hour, 0)
	sale, user := testenv.ID("s"), testenv.ID("u")
	ends := time.Now().Add(30 * time.Second)
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), ends)
	a := ask(t, h, "POST", tokenPath(sale), user)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	exp, _ := time.Parse(time.RFC3339, a.body["expires_at"])
	if exp.After(ends) || exp.Before(ends.Add(-2*time.Second)) {
		t.Fatalf("expires_at %v: want the end of the sale %v (rounded down to the second)", exp, ends)
	}
	if _, err := kr.Verify(a.body["token"], sale, user, ends); !errors.Is(err, tokenformat.ErrExpired) {
		t.Fatalf("at the end of the sale the token must be expired: %v", err)
	}
}

func TestZeroLeadTimeIssuesOnlyOnceTheSaleHasStarted(t *testing.T) {
	rdb := testenv.Redis(t)
	h := newIssuer(t, rdb, testRing(t), time.Minute, 0)
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(5*time.Second), time.Now().Add(time.Hour))
	if a := ask(t, h, "POST", tokenPath(sale), "alice"); a.status != 403 || a.body["code"] != contract.CodeNotStarted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
}

func TestAskingAgainReplacesTheUsersLiveToken(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	kr := testRing(t)
	h := newIssuer(t, rdb, kr, time.Minute, time.Minute)
	sale, user, other := testenv.ID("s"), testenv.ID("u"), testenv.ID("u")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	now := time.Now()

	first := ask(t, h, "POST", tokenPath(sale), user)
	c1, err := kr.Verify(first.body["token"], sale, user, now)
	if err != nil {
		t.Fatal(err)
	}
	second := ask(t, h, "POST", tokenPath(sale), user)
	c2, err := kr.Verify(second.body["token"], sale, user, now)
	if err != nil {
		t.Fatal(err)
	}
	ask(t, h, "POST", tokenPath(sale), other)
	if c1.Nonce == c2.Nonce {
		t.Fatal("two tokens share a nonce")
	}
	stored := rdb.HGet(ctx, contract.TokensKey(sale), user).Val()
	if stored != tokenformat.StoreValue(c2) {
		t.Fatalf("tokens hash holds %q, want the second token's %q", stored, tokenformat.StoreValue(c2))
	}
	if stored == tokenformat.StoreValue(c1) {
		t.Fatal("the first token is still live")
	}
	if n := rdb.HLen(ctx, contract.TokensKey(sale)).Val(); n != 2 {
		t.Fatalf("tokens hash has %d fields for two users", n)
	}
}

func TestConcurrentRequestsOfOneUserLeaveExactlyOneLiveToken(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	kr := testRing(t)
	h := newIssuer(t, rdb, kr, time.Minute, time.Minute)
	sale, user := testenv.ID("s"), testenv.ID("u")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	const n = 32
	values := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := ask(t, h, "POST", tokenPath(sale), user)
			c, err := kr.Verify(a.body["token"], sale, user, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			values[i] = tokenformat.StoreValue(c)
		})
	}
	wg.Wait()
	stored := rdb.HGet(ctx, contract.TokensKey(sale), user).Val()
	live := 0
	for _, v := range values {
		if v == stored {
			live++
		}
	}
	if live != 1 {
		t.Fatalf("%d of %d issued tokens match the stored value, want exactly 1", live, n)
	}
}

func TestRedisDownAnswers503WithRetryAfter(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if a := ask(t, h, "POST", tokenPath(sale), "alice"); a.status != 200 {
		t.Fatalf("before the outage: %d %s", a.status, a.raw)
	}
	srv.Kill()
	a := ask(t, h, "POST", tokenPath(sale), "alice")
	if a.status != 503 || a.body["code"] != contract.CodeUnavailable || a.header.Get("Retry-After") != "1" {
		t.Fatalf("Redis down: %d %v %s, want 503 unavailable with Retry-After: 1", a.status, a.header, a.raw)
	}
	srv.Start()
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour)) // AOF everysec may have lost it
	testenv.WaitFor(t, 10*time.Second, "issuing again after Redis is back", func() bool {
		return ask(t, h, "POST", tokenPath(sale), "alice").status == 200
	})
}

func TestOutcomesAreCountedAndExposedAsPlaceholders(t *testing.T) {
	rdb := testenv.Redis(t)
	h := newIssuer(t, rdb, testRing(t), time.Minute, time.Minute)
	sale := testenv.ID("s")
	preheat(t, rdb, sale, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	issued, unknown := count("issued"), count("unknown_sale")

	req := httptest.NewRequest("POST", tokenPath(sale), nil)
	req.Header.Set("X-User-ID", "alice")
	repl := caddyhttp.NewTestReplacer(req)
	rec := httptest.NewRecorder()
	_ = h.ServeHTTP(rec, req, nil)
	var body map[string]string
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if v, _ := repl.GetString("http.seckill.token.outcome"); v != "issued" {
		t.Errorf("outcome placeholder %q", v)
	}
	if v, _ := repl.GetString("http.seckill.token.expires_at"); v == "" || v != body["expires_at"] {
		t.Errorf("expires_at placeholder %q, body %q", v, body["expires_at"])
	}
	ask(t, h, "POST", tokenPath(testenv.ID("nosuch")), "alice")
	if d := count("issued") - issued; d != 1 {
		t.Errorf("issued counted %v times", d)
	}
	if d := count("unknown_sale") - unknown; d != 1 {
		t.Errorf("unknown_sale counted %v times", d)
	}
}

// count reads the requests counter of one outcome (through a registry, as /metrics does).
func count(outcome string) float64 {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(requests)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
