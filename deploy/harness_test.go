//go:build integration

package deploy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/proc"
	"github.com/seckilledge/seckill/internal/testenv"
)

const adminToken = "deploy-test-admin-token-0123456789-abc"

// The shipped files, relative to this package.
const (
	productionCaddyfile        = "Caddyfile.production"
	productionSessionCaddyfile = "Caddyfile.production-session"
	demoCaddyfile              = "../Caddyfile"
)

// shop is a fake shop. With signed sessions (Caddyfile.production) it signs each session as
// a JWT (ES256, kid "shop-1") and publishes its public key at /.well-known/jwks.json; with
// opaque ones (Caddyfile.production-session) it answers its session endpoint (cookie or bearer
// token -> user id in a response header). Pages for the rest.
type shop struct {
	srv *httptest.Server
	mu  sync.Mutex
	// sessions maps an opaque session token to a user id.
	sessions map[string]string
	// signed: signIn returns a JWT instead of an opaque token.
	signed bool
	key    *ecdsa.PrivateKey
	// sawIdentity counts shop pages that arrived with an identity header (X-User-ID).
	sawIdentity atomic.Int64
	lookups     atomic.Int64
	jwksFetches atomic.Int64
}

// userHeader is the response header the fake shop names the user in; the test sets
// SECKILL_SESSION_USER_HEADER to it, so the configurable header is exercised.
const userHeader = "X-Shop-User"

// The fake shop's signed sessions: issuer (its URL), audience, kid.
const (
	shopAudience = "seckill"
	shopKid      = "shop-1"
)

func startShop(t *testing.T, signed bool) *shop {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &shop{sessions: map[string]string{}, signed: signed, key: key}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/jwks.json" {
			s.jwksFetches.Add(1)
			w.Header().Set("Content-Type", "application/jwk-set+json")
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
				{Key: &s.key.PublicKey, KeyID: shopKid, Algorithm: string(jose.ES256), Use: "sig"},
			}})
			return
		}
		if r.URL.Path == "/session" {
			s.lookups.Add(1)
			tok := ""
			if c, err := r.Cookie("session"); err == nil {
				tok = c.Value
			} else if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
				tok = strings.TrimPrefix(a, "Bearer ")
			}
			if tok == "session-service-broken" {
				http.Error(w, "<html>oops</html>", http.StatusInternalServerError)
				return
			}
			s.mu.Lock()
			user, ok := s.sessions[tok]
			s.mu.Unlock()
			if !ok {
				// A real shop answers with a login page or a redirect; the gateway must turn it
				// into the contract's JSON 401.
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, "<html>please sign in</html>")
				return
			}
			w.Header().Set(userHeader, user)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Header.Get("X-User-ID") != "" {
			s.sawIdentity.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"shop":"page"}`)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// signIn makes a session for user and returns its token: a JWT signed by the shop, or an
// opaque id its session endpoint knows.
func (s *shop) signIn(user string) string {
	if s.signed {
		now := time.Now()
		return s.sign(jwt.Claims{Issuer: s.srv.URL, Audience: jwt.Audience{shopAudience}, Subject: user,
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, s.key)
	}
	tok := "sess-" + user + "-" + testenv.ID("")
	s.mu.Lock()
	s.sessions[tok] = user
	s.mu.Unlock()
	return tok
}

// sign signs claims with key as the shop's kid (a forger passes a key of its own).
func (s *shop) sign(c jwt.Claims, key *ecdsa.PrivateKey) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), shopKid))
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}

// gateway is a running stack (internal/harness): the backend and Caddy running one of the
// shipped Caddyfiles, as processes, on a private Redis (a relay on the shared one would
// publish other tests' sales), a RabbitMQ vhost and a Postgres database; and the fake shop.
type gateway struct {
	Base      string // the gateway
	Backend   string // the backend's order API
	Admin     string // the backend's admin API
	Shop      *shop
	RedisAddr string
	stopBack  func()
}

func randomKey(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startStack starts the fake shop and the stack with the given shipped Caddyfile.
func startStack(t *testing.T, caddyfile string) *gateway {
	t.Helper()
	g := &gateway{Shop: startShop(t, caddyfile == productionCaddyfile)}
	shop := g.Shop.srv.URL
	extra := ""
	if caddyfile == demoCaddyfile {
		// The clients are on loopback and say who they are with X-Forwarded-For.
		extra = harness.TrustLoopbackProxy
	}
	s := startHarness(t, harness.Options{Caddyfile: caddyfile, ExtraGlobal: extra, Env: []string{
		"SECKILL_SWEEP_INTERVAL=200ms",
		"SECKILL_JWKS_URL=" + shop + "/.well-known/jwks.json",
		"SECKILL_JWT_ISSUER=" + shop,
		"SECKILL_JWT_AUDIENCE=" + shopAudience,
		"SECKILL_SESSION_URL=" + shop + "/session",
		"SECKILL_SESSION_USER_HEADER=" + userHeader,
		"SECKILL_SESSION_COOKIE=session",
		"SECKILL_SHOP=" + strings.TrimPrefix(shop, "http://"),
	}})
	b := s.Backends[0]
	g.Base, g.Backend, g.Admin, g.RedisAddr = s.Gateways[0].URL, "http://"+b.Upstream, b.URL, s.RedisAddr
	g.stopBack = func() { _ = b.Stop(context.Background()) }
	g.waitGateway(t)
	return g
}

// startHarness starts a backend and a gateway (o says which Caddyfile and what more
// environment) on a private Redis and the shared RabbitMQ and Postgres, until the test ends.
// A failed test logs the end of each process's log.
func startHarness(t *testing.T, o harness.Options) *harness.Stack {
	t.Helper()
	testenv.NeedsServices(t, "Redis, RabbitMQ and Postgres")
	bin, err := binaries.Dir("..")
	if err != nil {
		t.Fatal(err)
	}
	o.Name, o.Root, o.BinDir, o.LogDir = "deploy", "..", bin, t.TempDir()
	o.AdminToken, o.TokenKey, o.PrivateRedis = adminToken, randomKey(t), true
	o.AMQPURL, o.MgmtURL, o.PGAdminURL = testenv.AMQPURL(), testenv.AMQPMgmtURL(), testenv.PGAdminURL()
	s, err := harness.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*proc.Server{s.Gateways[0].Server, s.Backends[0].Server} {
				t.Logf("%s's log:\n%s", p.Name, proc.LogTail(p.Log))
			}
		}
		s.Close()
	})
	return s
}

// binaries are the gateway and backend, built once for the package's tests.
var binaries harness.Binaries

func TestMain(m *testing.M) { os.Exit(binaries.Run(m)) }

// waitGateway waits until the gateway answers /healthz.
func (g *gateway) waitGateway(t *testing.T) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, "the gateway to answer", func() bool {
		resp, err := http.Get(g.Base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// newSale creates a sale open now on the backend and preheats it into Redis.
func (g *gateway) newSale(t *testing.T, stock int) string {
	t.Helper()
	return g.newSaleWith(t, stock, "")
}

// newSaleWith is newSale with more fields of the sale's JSON (extra: `,"room":{...}`).
func (g *gateway) newSaleWith(t *testing.T, stock int, extra string) string {
	t.Helper()
	sale := testenv.ID("s")
	openSale(t, g.Admin, sale, stock, extra)
	return sale
}

// openSale creates sale on the backend's admin API at admin, open from a minute ago for an
// hour, with more fields of its JSON (extra), and preheats it into Redis.
func openSale(t *testing.T, admin, sale string, stock int, extra string) {
	t.Helper()
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"id":%q,"stock":%d,"starts_at":%q,"ends_at":%q,"pay_within":"15m"%s}`, sale, stock,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), extra)
	for _, step := range []struct{ path, body string }{{"/admin/sales", body}, {"/admin/sales/" + sale + "/preheat", ""}} {
		req, _ := http.NewRequest(http.MethodPost, admin+step.path, strings.NewReader(step.body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %s", step.path, resp.StatusCode, b)
		}
	}
}

// client is one simulated browser: a session (cookie or bearer), an IP (X-Forwarded-For from
// a trusted loopback proxy), and whatever identity headers it chooses to claim.
type client struct {
	Cookie string
	Bearer string
	IP     string
	Claim  string // sent as X-User-ID (and the retired X-Seckill-User): who the client pretends to be
}

var ipCounter atomic.Int64

// newIP is a fresh client address from the documentation range, so throttle zones keyed on
// the IP never meet across tests of one stack.
func newIP() string {
	n := ipCounter.Add(1)
	return fmt.Sprintf("198.51.%d.%d", (n/250)%250, n%250+1)
}

// reply is one decoded answer.
type reply struct {
	Status     int
	Body       []byte
	Code       string `json:"code"`
	Token      string `json:"token"`
	OrderID    string `json:"order_id"`
	State      string `json:"status"`
	RetryAfter string
	// The waiting room's answers (POST and GET /seckill/<sale>/queue).
	Ticket    string `json:"ticket"`
	RoomState string `json:"state"`
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func (g *gateway) do(t *testing.T, c client, method, path string, hdr map[string]string) reply {
	t.Helper()
	r, err := g.try(c, method, path, hdr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// burst sends n copies of a request at once and returns the answers.
func (g *gateway) burst(t *testing.T, n int, c client, method, path string) []reply {
	t.Helper()
	out := make([]reply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = g.try(c, method, path, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return out
}

// try sends one request as the client; a body that is not JSON is an error.
func (g *gateway) try(c client, method, path string, hdr map[string]string) (reply, error) {
	req, err := http.NewRequest(method, g.Base+path, nil)
	if err != nil {
		return reply{}, err
	}
	if c.Cookie != "" {
		req.AddCookie(&http.Cookie{Name: "session", Value: c.Cookie})
	}
	if c.Bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.Bearer)
	}
	if c.IP != "" {
		req.Header.Set("X-Forwarded-For", c.IP)
	}
	if c.Claim != "" {
		req.Header.Set("X-User-ID", c.Claim)
		req.Header.Set("X-Seckill-User", c.Claim)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Body: b, RetryAfter: resp.Header.Get("Retry-After")}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("status %d, body %q is not JSON", resp.StatusCode, b)
	}
	return r, nil
}

// token asks for a purchase token.
func (g *gateway) token(t *testing.T, c client, sale string) reply {
	t.Helper()
	return g.do(t, c, http.MethodPost, "/seckill/"+sale+"/token", nil)
}

// buy buys with a token.
func (g *gateway) buy(t *testing.T, c client, sale, token string) reply {
	t.Helper()
	return g.do(t, c, http.MethodPost, "/seckill/"+sale+"/buy", map[string]string{"X-Seckill-Token": token})
}

// rawExchange sends raw bytes on a fresh connection and returns the raw answer (until the
// server closes the connection or timeout passes).
func rawExchange(addr string, raw []byte, timeout time.Duration) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(raw); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && len(b) > 0 {
		err = nil // a keep-alive answer: the server keeps the connection open after it
	}
	return b, err
}

func hostPort(base string) string { return strings.TrimPrefix(base, "http://") }
