package identity

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// handlerWith is a seckill_identity handler over static keys, without Caddy.
func handlerWith(t *testing.T, cookie string, keys ...shoptest.Key) *Identity {
	t.Helper()
	h := &Identity{JWT: JWT{Cookie: cookie, Issuer: shoptest.Issuer, Audience: shoptest.Audience}}
	for _, k := range keys {
		h.Keys = append(h.Keys, StaticKey{ID: k.Kid, Algorithm: string(k.Alg), Value: shoptest.PEM(t, k)})
	}
	if err := h.setup(nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	h.refuse = handler.Writer{HandleErrors: h.HandleErrors}
	return h
}

// served is what the next handler saw, or the handler.
type served struct {
	status int
	code   string
	user   string // {http.auth.user.id} as the next handler saw it
	// lanes is {http.auth.user.lanes} as the next handler saw it; lanesSet, whether it was set.
	lanes    string
	lanesSet bool
	claimed  string // the X-User-ID header the next handler saw
	header   http.Header
	err      error
}

func serve(h caddyhttp.MiddlewareHandler, r *http.Request) served {
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	var s served
	s.err = h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		s.user, _ = repl.GetString("http.auth.user.id")
		s.lanes, s.lanesSet = repl.GetString("http.auth.user.lanes")
		s.claimed = r.Header.Get("X-User-ID")
		w.WriteHeader(http.StatusOK)
		return nil
	}))
	s.status, s.header = w.Code, w.Header()
	var body struct{ Code string }
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	s.code = body.Code
	return s
}

func request(hdr http.Header, cookies ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/seckill/s1/token", nil)
	for k, vs := range hdr {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	for _, c := range cookies {
		r.Header.Add("Cookie", "session="+c)
	}
	return r
}

func refused(t *testing.T, name string, s served, status int, code string) {
	t.Helper()
	if s.status != status || s.code != code || s.user != "" {
		t.Errorf("%s: %d %s (user %q), want %d %s", name, s.status, s.code, s.user, status, code)
	}
	if status == http.StatusUnauthorized && !strings.HasPrefix(s.header.Get("WWW-Authenticate"), `Bearer realm="seckill"`) {
		t.Errorf("%s: WWW-Authenticate %q", name, s.header.Get("WWW-Authenticate"))
	}
}

func TestTheIdentityComesFromTheSessionNeverFromTheClientsHeader(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	h := handlerWith(t, "session", k)
	s := serve(h, request(http.Header{"X-User-Id": {"mallory"}}, shoptest.Session(t, k, "alice")))
	if s.status != http.StatusOK || s.user != "alice" || s.claimed != "" {
		t.Fatalf("%d, user %q, X-User-ID after the handler %q", s.status, s.user, s.claimed)
	}
	refused(t, "a claim without a session", serve(h, request(http.Header{"X-User-Id": {"alice"}})), http.StatusUnauthorized, "unauthenticated")
}

func TestTwoCredentialsOfOneKindAreRefused(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	h := handlerWith(t, "session", k)
	alice, mallory := shoptest.Session(t, k, "alice"), shoptest.Session(t, k, "mallory")
	refused(t, "two Authorization headers", serve(h, request(http.Header{"Authorization": {"Bearer " + alice, "Bearer " + mallory}})),
		http.StatusUnauthorized, "unauthenticated")
	refused(t, "two Authorization headers, one empty", serve(h, request(http.Header{"Authorization": {"Bearer " + alice, ""}})),
		http.StatusUnauthorized, "unauthenticated")
	refused(t, "the session cookie twice", serve(h, request(nil, alice, mallory)), http.StatusUnauthorized, "unauthenticated")

	// One of each: the bearer token is the session. Another scheme leaves the cookie.
	if s := serve(h, request(http.Header{"Authorization": {"Bearer " + alice}}, mallory)); s.user != "alice" {
		t.Errorf("bearer and cookie: user %q, want the bearer's", s.user)
	}
	if s := serve(h, request(http.Header{"Authorization": {"Basic c3RhZ2luZzpwYXNz"}}, alice)); s.user != "alice" {
		t.Errorf("basic auth and cookie: %d user %q", s.status, s.user)
	}
	if s := serve(h, request(http.Header{"Authorization": {"bearer " + alice}})); s.user != "alice" {
		t.Errorf("lower-case scheme: %d user %q", s.status, s.user)
	}
}

func TestACredentialOver8KiBIsRefused(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	h := handlerWith(t, "session", k)
	big := strings.Repeat("a", core.MaxToken+1)
	before := shoptest.Counter(t, jwtRequests.WithLabelValues(string(core.TooLarge)))
	refused(t, "bearer", serve(h, request(http.Header{"Authorization": {"Bearer " + big}})), http.StatusUnauthorized, "unauthenticated")
	refused(t, "cookie", serve(h, request(nil, big)), http.StatusUnauthorized, "unauthenticated")
	if got := shoptest.Counter(t, jwtRequests.WithLabelValues(string(core.TooLarge))) - before; got != 2 {
		t.Errorf("too_large counted %v times, want 2", got)
	}
}

func TestWithoutKeysTheAnswerIs503NotA401(t *testing.T) {
	shop := shoptest.NewShop(t)
	k := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	shop.Down.Store(true)
	j := core.NewJWKS(shop.URL(), shop.Srv.Client(), time.Hour, time.Hour, nopLogger, nil)
	t.Cleanup(func() { _ = j.Destruct() })
	h := &Identity{JWT: JWT{Cookie: "session", JWKSURL: shop.URL()}}
	if err := h.setup(func(string) (*core.JWKS, error) { return j, nil }); err != nil {
		t.Fatal(err)
	}
	s := serve(h, request(nil, shoptest.Session(t, k, "alice")))
	refused(t, "JWKS never loaded", s, http.StatusServiceUnavailable, "unavailable")
	if s.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
}

func TestWithHandleErrorsARefusalIsACaddyError(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	h := handlerWith(t, "session", k)
	h.refuse = handler.Writer{HandleErrors: true}
	s := serve(h, request(nil, shoptest.Session(t, shoptest.NewKey(t, "k1", jose.ES256), "alice")))
	var he caddyhttp.HandlerError
	if !errors.As(s.err, &he) || he.StatusCode != http.StatusUnauthorized {
		t.Fatalf("error %v", s.err)
	}
	if s.header.Get("WWW-Authenticate") == "" {
		t.Error("no WWW-Authenticate with handle_errors")
	}
}

// Caddy's own authentication handler with the seckill_jwt provider: the user is set the Caddy
// way, a refusal is that handler's 401 with our challenge.
func TestTheProviderAuthenticatesForCaddysAuthenticationHandler(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	p := &handlerWith(t, "session", k).JWT
	w := httptest.NewRecorder()
	user, ok, err := p.Authenticate(w, request(nil, shoptest.Session(t, k, "alice")))
	if err != nil || !ok || user.ID != "alice" {
		t.Fatalf("%v %v %v", user, ok, err)
	}
	user, ok, err = p.Authenticate(w, request(nil, shoptest.Session(t, shoptest.NewKey(t, "k1", jose.ES256), "alice")))
	if err != nil || ok || user.ID != "" || !strings.Contains(w.Header().Get("WWW-Authenticate"), "invalid_token") {
		t.Fatalf("forged: %v %v %v %v", user, ok, err, w.Header())
	}
}

// The spellings of a claimed user a backend behind the gateway might read as X-User-ID: any
// letter case, and underscores (CGI-style servers map both to HTTP_X_USER_ID).
var claimedUserHeaders = []string{"X-User-ID", "x-user-id", "X-USER-ID", "X_User_ID", "x_user_id", "X_USER-ID"}

// claimsLeft lists the request's headers that still name a user (or extra).
func claimsLeft(h http.Header, extra string) []string {
	var left []string
	for k := range h {
		n := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
		if n == "x-user-id" || (extra != "" && n == strings.ToLower(extra)) {
			left = append(left, k)
		}
	}
	return left
}

// No spelling of a client's X-User-ID survives seckill_identity, nor the
// seckill_jwt provider of Caddy's authentication handler (which left it on the request).
func TestNoSpellingOfAClaimedUserHeaderSurvivesEitherPath(t *testing.T) {
	k := shoptest.NewKey(t, "k1", jose.ES256)
	h := handlerWith(t, "session", k)
	for _, name := range claimedUserHeaders {
		// seckill_identity: what the next handler sees.
		r := request(nil, shoptest.Session(t, k, "mallory"))
		r.Header[name] = []string{"victim"} // as the wire has it, not canonicalized
		var left []string
		err := h.ServeHTTP(httptest.NewRecorder(), r, caddyhttp.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) error {
			left = claimsLeft(r.Header, "")
			return nil
		}))
		if err != nil || len(left) != 0 {
			t.Errorf("seckill_identity, %s: %v, left %v", name, err, left)
		}

		// seckill_jwt: the request Caddy's authentication handler passes on.
		for _, tok := range []string{shoptest.Session(t, k, "mallory"), "forged"} {
			r := request(nil, tok)
			r.Header[name] = []string{"victim"}
			_, _, _ = h.JWT.Authenticate(httptest.NewRecorder(), r)
			if left := claimsLeft(r.Header, ""); len(left) != 0 {
				t.Errorf("seckill_jwt, %s, token %.8s: left %v", name, tok, left)
			}
		}
	}
}
