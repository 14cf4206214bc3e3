package identity

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func startTestStandin(t *testing.T) *StandinProcess {
	t.Helper()
	s, err := NewStandin()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &StandinProcess{URL: srv.URL, c: srv.Client()}
}

func get(t *testing.T, url string, h http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// The stand-in is the session service of every forward_auth case: it must answer only the
// sessions it signed, and count every lookup, signed in or not, and nothing else.
func TestStandinAnswersItsOwnSessionsAndCountsEveryLookup(t *testing.T) {
	sp := startTestStandin(t)
	ctx := context.Background()
	s, err := sp.Sessions(ctx, "u-", 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Users[2] != "u-000002" {
		t.Fatalf("users %v", s.Users)
	}
	for _, c := range []struct {
		h    http.Header
		code int
		user string
	}{
		{http.Header{"Cookie": {StandinCookie + "=" + s.Tokens[0]}}, 200, "u-000000"},
		{http.Header{"Authorization": {"Bearer " + s.Tokens[1]}}, 200, "u-000001"},
		{http.Header{"Cookie": {StandinCookie + "=" + s.Tokens[1] + "x"}}, 401, ""},
		{http.Header{"Cookie": {"other=" + s.Tokens[2]}}, 401, ""},
		{nil, 401, ""},
	} {
		resp := get(t, sp.URL+"/session", c.h)
		if resp.StatusCode != c.code || resp.Header.Get("X-User-ID") != c.user {
			t.Errorf("%v: %d %q, want %d %q", c.h, resp.StatusCode, resp.Header.Get("X-User-ID"), c.code, c.user)
		}
	}
	get(t, sp.URL+"/.well-known/jwks.json", nil)
	get(t, sp.URL+"/healthz", nil)
	calls, err := sp.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls != (StandinCalls{Session: 5, JWKS: 1, Issued: 3}) {
		t.Errorf("calls %+v, want 5 lookups, 1 JWKS fetch, 3 sessions (reading the counters counts nothing)", calls)
	}
	if again, _ := sp.Calls(ctx); again != calls {
		t.Errorf("reading the counters changed them: %+v then %+v", calls, again)
	}
}

// What seckill_identity will check: an ES256 signature by the published key, and iss, aud, sub.
func TestStandinSessionsVerifyWithItsJWKS(t *testing.T) {
	sp := startTestStandin(t)
	s, err := sp.Sessions(context.Background(), "v-", 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(sp.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(s.Tokens[0], []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 || keys[0].Algorithm != string(jose.ES256) {
		t.Fatalf("kid %q: keys %+v", tok.Headers[0].KeyID, keys)
	}
	var c jwt.Claims
	if err := tok.Claims(keys[0].Key, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(jwt.Expected{Issuer: StandinIssuer, AnyAudience: jwt.Audience{StandinAudience}, Subject: "v-000000", Time: time.Now()}); err != nil {
		t.Error(err)
	}
}

func TestStandinRefusesUserIDsTheGatewayWouldRefuse(t *testing.T) {
	sp := startTestStandin(t)
	if _, err := sp.Sessions(context.Background(), "bad user ", 1); err == nil {
		t.Error("a prefix with spaces was signed")
	}
}

func TestRoundOrderRotatesTheCasesByOneEachRound(t *testing.T) {
	cases := []string{"a", "b", "c"}
	for r, want := range []string{"a,b,c", "b,c,a", "c,a,b", "a,b,c"} {
		if got := strings.Join(RoundOrder(cases, r), ","); got != want {
			t.Errorf("round %d: %s, want %s", r, got, want)
		}
	}
	if strings.Join(cases, ",") != "a,b,c" {
		t.Error("RoundOrder changed its argument")
	}
}

func rush(c string, round int, gw, standin float64, calls int64) IdentitySide {
	return IdentitySide{Case: c, Round: round, Sessions: 100, Completed: 1000, OK: 1000, ElapsedS: 5, Throughput: 200,
		CPU: map[string]float64{"gateway": gw, "standin": standin, "redis": 10}, SessionCalls: calls}
}

func target(t *testing.T, ts []IdentityTarget, prefix string) IdentityTarget {
	t.Helper()
	for _, x := range ts {
		if strings.HasPrefix(x.Name, prefix) {
			return x
		}
	}
	t.Fatalf("no target %q in %+v", prefix, ts)
	return IdentityTarget{}
}

// Ratios pair each case with the demo path of the same round, then take the median; the
// total is the gateway plus the session service.
func TestSummaryRatiosAreMediansOfSameRoundRatios(t *testing.T) {
	sides := []IdentitySide{
		rush(IdentityDemo, 1, 50, 0, 0), rush(IdentityJWT, 1, 55, 0, 0), rush(IdentityForwardAuth, 1, 100, 50, 1000),
		rush(IdentityDemo, 2, 100, 0, 0), rush(IdentityJWT, 2, 110, 0, 0), rush(IdentityForwardAuth, 2, 150, 50, 1000),
		rush(IdentityDemo, 3, 60, 0, 0), rush(IdentityJWT, 3, 90, 0, 0), rush(IdentityForwardAuth, 3, 120, 60, 1000),
	}
	cases, targets := SummarizeIdentity(sides, []string{IdentityDemo, IdentityJWT, IdentityForwardAuth}, 30*time.Second)
	if len(cases) != 3 {
		t.Fatalf("%d cases", len(cases))
	}
	jwt, fa := cases[1], cases[2]
	if jwt.GatewayUs != 90 || jwt.GatewayRatio != 1.1 {
		t.Errorf("jwt: %v µs, %vx; want the median 90 µs and the median of 1.1, 1.1, 1.5", jwt.GatewayUs, jwt.GatewayRatio)
	}
	// forward_auth's totals: 150/50, 200/100, 180/60 -> ratios 3, 2, 3.
	if fa.TotalUs != 180 || fa.TotalRatio != 3 || fa.GatewayRatio != 2 {
		t.Errorf("forward_auth: total %v µs, total ratio %v, gateway ratio %v", fa.TotalUs, fa.TotalRatio, fa.GatewayRatio)
	}
	if fa.CallsPerSession != 10 || fa.SessionCalls != 1000 || fa.OKShare != 1 {
		t.Errorf("forward_auth: %+v", fa)
	}
	if x := target(t, targets, "local JWT: gateway"); !x.Met || x.Got != "1.10x" {
		t.Errorf("%+v", x)
	}
	if x := target(t, targets, "local JWT: session"); !x.Met {
		t.Errorf("%+v", x)
	}
}

func TestTargetsAreMissedByASessionCallOrACostlyJWT(t *testing.T) {
	sides := []IdentitySide{rush(IdentityDemo, 1, 50, 0, 0), rush(IdentityJWT, 1, 60, 0, 1)}
	_, targets := SummarizeIdentity(sides, []string{IdentityDemo, IdentityJWT}, 30*time.Second)
	if x := target(t, targets, "local JWT: gateway"); x.Met {
		t.Errorf("1.2x met the 1.15x target: %+v", x)
	}
	if x := target(t, targets, "local JWT: session"); x.Met {
		t.Errorf("a session call during the rush met the target: %+v", x)
	}
}

// The cache's target is per session per TTL: a rush longer than the TTL may ask again.
func TestCachedForwardAuthMayAskOncePerSessionPerTTL(t *testing.T) {
	for _, c := range []struct {
		elapsed float64
		calls   int64
		met     bool
	}{{5, 100, true}, {5, 101, false}, {45, 200, true}, {45, 201, false}} {
		s := rush(IdentitySession, 1, 60, 1, c.calls)
		s.ElapsedS = c.elapsed
		_, targets := SummarizeIdentity([]IdentitySide{s}, []string{IdentitySession}, 30*time.Second)
		if x := target(t, targets, "cached forward_auth"); x.Met != c.met {
			t.Errorf("%d calls for 100 sessions over %gs: %+v", c.calls, c.elapsed, x)
		}
	}
}

func TestARunOfRefusalsIsNotAResult(t *testing.T) {
	s := rush(IdentityJWT, 1, 60, 0, 0)
	s.OK = 900
	r := &IdentityResult{}
	r.Cases, r.Targets = SummarizeIdentity([]IdentitySide{s}, []string{IdentityJWT}, time.Second)
	if r.OK() {
		t.Error("a case answering 90 % of its requests with a token passed")
	}
}

// A case whose port another listener answers (a Caddy admin endpoint sharing it: 404 to
// every path) is refused before its rush, naming the case.
func TestASiteAnsweredByAnotherListenerIsRefusedBeforeItsRush(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		http.NotFound(w, r)
	}))
	defer site.Close()
	admin := httptest.NewServer(http.NotFoundHandler())
	defer admin.Close()
	ctx := context.Background()
	if err := checkSites(ctx, map[string]string{IdentityDemo: site.URL, IdentityJWT: site.URL}); err != nil {
		t.Fatalf("sites that answer their /healthz: %v", err)
	}
	err := checkSites(ctx, map[string]string{IdentityDemo: site.URL, IdentityForwardAuthClose: admin.URL})
	if err == nil || !strings.Contains(err.Error(), IdentityForwardAuthClose) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want the forward_auth_close site refused with its 404", err)
	}
}
