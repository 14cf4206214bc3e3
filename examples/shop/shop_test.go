package shop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/contract"
)

const testSecret = "webhook-secret-for-the-shop-tests"

const testShopToken = "shop-token-0123456789"

func newShop(t *testing.T, backendAdmin string) (*Shop, *httptest.Server) {
	return newShopAt(t, "http://shop.test", backendAdmin)
}

func newShopAt(t *testing.T, publicURL, backendAdmin string) (*Shop, *httptest.Server) {
	t.Helper()
	key, err := LoadOrCreateKey("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{PublicURL: publicURL, BackendAdmin: backendAdmin, ShopToken: testShopToken,
		WebhookSecret: testSecret, Sales: []string{"demo"}, SessionTTL: time.Hour, Events: 10, Demo: true}, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// browser is an HTTP client with cookies that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func signIn(t *testing.T, c *http.Client, base, user string) *http.Response {
	t.Helper()
	resp, err := c.PostForm(base+"/signin", url.Values{"user": {user}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestTheJWKSServesTheKeyThatVerifiesTheSessionTheShopSetsAtSignIn(t *testing.T) {
	_, srv := newShop(t, "")
	resp := signIn(t, browser(t), srv.URL, "alice")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d, want 303", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("no %s cookie in %v", CookieName, resp.Header["Set-Cookie"])
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" || cookie.Secure {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Lax, Path=/, not Secure on http", cookie)
	}

	r, err := http.Get(srv.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(r.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || !set.Keys[0].IsPublic() || set.Keys[0].Algorithm != "ES256" || set.Keys[0].KeyID == "" {
		t.Fatalf("JWKS %+v: want one public ES256 key with a kid", set)
	}

	tok, err := jwt.ParseSigned(cookie.Value, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	kid := tok.Headers[0].KeyID
	keys := set.Key(kid)
	if len(keys) != 1 {
		t.Fatalf("the token's kid %q is not in the JWKS", kid)
	}
	var c jwt.Claims
	if err := tok.Claims(keys[0].Key, &c); err != nil {
		t.Fatalf("the session does not verify against the published key: %v", err)
	}
	if err := c.Validate(jwt.Expected{Issuer: "http://shop.test", AnyAudience: jwt.Audience{"seckill"}, Subject: "alice", Time: time.Now()}); err != nil {
		t.Fatalf("claims %+v: %v", c, err)
	}
	if c.IssuedAt == nil || c.Expiry == nil || c.Expiry.Time().Sub(c.IssuedAt.Time()) != time.Hour {
		t.Fatalf("claims %+v: want iat and exp one hour apart", c)
	}
	// Another key does not verify it.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err := tok.Claims(&other.PublicKey, &c); err == nil {
		t.Fatal("the session verified against a foreign key")
	}
}

func TestTheShopBelievesOnlyItsOwnUnexpiredSessions(t *testing.T) {
	s, _ := newShop(t, "")
	now := time.Now()
	tok, err := s.Sessions().Issue("alice", now)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := s.Sessions().User(tok, now.Add(59*time.Minute)); err != nil || u != "alice" {
		t.Fatalf("own session: %q %v", u, err)
	}
	if _, err := s.Sessions().User(tok, now.Add(61*time.Minute)); err == nil {
		t.Fatal("an expired session was believed")
	}
	foreignKey, _ := LoadOrCreateKey("")
	foreign, _ := NewSessions(foreignKey, "http://shop.test", time.Hour)
	ftok, _ := foreign.Issue("alice", now)
	if _, err := s.Sessions().User(ftok, now); err == nil {
		t.Fatal("a session signed with another key was believed")
	}
	otherIssuer, _ := NewSessions(s.Sessions().key, "http://elsewhere.test", time.Hour)
	itok, _ := otherIssuer.Issue("alice", now)
	if _, err := s.Sessions().User(itok, now); err == nil {
		t.Fatal("a session of another issuer was believed")
	}
	if _, err := s.Sessions().Issue("not a user!", now); err == nil {
		t.Fatal("a session for a malformed user name was issued")
	}
}

func TestSignInRefusesAMalformedUserName(t *testing.T) {
	_, srv := newShop(t, "")
	for _, user := range []string{"", "a b", strings.Repeat("x", 65), "<script>"} {
		resp := signIn(t, browser(t), srv.URL, user)
		if resp.StatusCode != http.StatusBadRequest || len(resp.Cookies()) != 0 {
			t.Errorf("user %q: %d with cookies %v, want 400 and none", user, resp.StatusCode, resp.Cookies())
		}
	}
}

func event(typ, order, user string) []byte {
	b, _ := json.Marshal(contract.WebhookEvent{ID: "ev-" + typ + "-" + order, Type: typ, OrderID: order, SaleID: "demo",
		Quantity: 1, UserID: user, At: time.Now().UTC()})
	return b
}

func deliver(t *testing.T, base string, body []byte, signature string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(contract.SignatureHeader, signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAWebhookWithABadSignatureIsRefusedAndNotBelieved(t *testing.T) {
	s, srv := newShop(t, "")
	body := event(contract.EventOrderCreated, "o1", "alice")
	for name, sig := range map[string]string{
		"no header":      "",
		"another secret": contract.SignWebhook([]string{"not-the-shop-secret-at-all"}, time.Now(), body),
		"old":            contract.SignWebhook([]string{testSecret}, time.Now().Add(-time.Hour), body),
		"other body":     contract.SignWebhook([]string{testSecret}, time.Now(), event(contract.EventOrderCreated, "o1", "mallory")),
	} {
		if code := deliver(t, srv.URL, body, sig); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	if _, ok := s.Inbox().Order("o1"); ok {
		t.Fatal("an unverified event made an order")
	}
	for _, d := range s.Inbox().Deliveries() {
		if d.Verified || d.Event != nil || d.Error == "" {
			t.Fatalf("refused delivery listed as %+v", d)
		}
	}

	// Signed with the shop's secret (the first one of a rotation is enough): believed once.
	good := contract.SignWebhook([]string{testSecret, "the-old-secret-during-rotation"}, time.Now(), body)
	for range 2 {
		if code := deliver(t, srv.URL, body, good); code != http.StatusNoContent {
			t.Fatalf("signed delivery: %d, want 204", code)
		}
	}
	if o, ok := s.Inbox().Order("o1"); !ok || o.Status != contract.StatusCreated || o.UserID != "alice" {
		t.Fatalf("order after order.created: %+v %v", o, ok)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/webhooks", nil)
	req.Header.Set("Authorization", "Bearer "+testShopToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	n := len(list.Deliveries)
	if n != 6 || !list.Deliveries[n-2].Verified || list.Deliveries[n-2].Duplicate || !list.Deliveries[n-1].Duplicate {
		t.Fatalf("GET /webhooks: %+v, want 4 refused, then one verified and its duplicate", list.Deliveries)
	}
}

func TestALateOrderCreatedNeverMovesAPaidOrderBack(t *testing.T) {
	in := NewInbox(testSecret, 10)
	now := time.Now()
	for _, typ := range []string{contract.EventOrderCreated, contract.EventOrderPaid} {
		b := event(typ, "o1", "alice")
		in.Receive(contract.SignWebhook([]string{testSecret}, now, b), b, now)
	}
	b, _ := json.Marshal(contract.WebhookEvent{ID: "redelivered-differently", Type: contract.EventOrderCreated, OrderID: "o1", UserID: "alice"})
	in.Receive(contract.SignWebhook([]string{testSecret}, now, b), b, now)
	if o, _ := in.Order("o1"); o.Status != contract.StatusPaid {
		t.Fatalf("status %q, want paid", o.Status)
	}
}

func TestOnlyTheOwnerPaysAndTheShopConfirmsWithItsShopToken(t *testing.T) {
	var calls atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/shop/orders/o1/paid" || r.Header.Get("Authorization") != "Bearer shop-token-0123456789" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"code":"unauthenticated","message":"wrong call"}`)
			return
		}
		_, _ = io.WriteString(w, `{"order_id":"o1","sale_id":"demo","status":"paid"}`)
	}))
	defer backend.Close()
	s, srv := newShop(t, backend.URL)
	body := event(contract.EventOrderCreated, "o1", "alice")
	if code := deliver(t, srv.URL, body, contract.SignWebhook([]string{testSecret}, time.Now(), body)); code != http.StatusNoContent {
		t.Fatal(code)
	}

	pay := func(c *http.Client) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/account/orders/o1/pay", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := pay(browser(t)); code != http.StatusUnauthorized {
		t.Fatalf("signed out: %d %s, want 401", code, b)
	}
	bob := browser(t)
	signIn(t, bob, srv.URL, "bob")
	if code, b := pay(bob); code != http.StatusNotFound {
		t.Fatalf("bob paying alice's order: %d %s, want 404", code, b)
	}
	if calls.Load() != 0 {
		t.Fatal("the backend was asked for someone else's order")
	}
	alice := browser(t)
	signIn(t, alice, srv.URL, "alice")
	if code, b := pay(alice); code != http.StatusOK || !strings.Contains(b, `"paid"`) {
		t.Fatalf("alice paying: %d %s", code, b)
	}
	if calls.Load() != 1 {
		t.Fatalf("the backend was called %d times, want 1", calls.Load())
	}
	if o, _ := s.Inbox().Order("o1"); o.Status != contract.StatusPaid {
		t.Fatalf("the shop shows %q, want paid", o.Status)
	}
}

func TestTheKeyFileIsWrittenOnceAndReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop-key.pem")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 600", fi, err)
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Fatal("the key read back is not the key written")
	}
}

func TestThePageShowsTheSignInFormOrTheUsersOwnOrdersWithAPayButtonForCreatedOnes(t *testing.T) {
	_, srv := newShop(t, "")
	for _, ev := range [][]byte{event(contract.EventOrderCreated, "o-alice", "alice"), event(contract.EventOrderCreated, "o-bob", "bob"),
		event(contract.EventOrderCreated, "o-alice-paid", "alice"), event(contract.EventOrderPaid, "o-alice-paid", "alice")} {
		if code := deliver(t, srv.URL, ev, contract.SignWebhook([]string{testSecret}, time.Now(), ev)); code != http.StatusNoContent {
			t.Fatal(code)
		}
	}
	page := func(c *http.Client) string {
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if p := page(browser(t)); !strings.Contains(p, `id="signin"`) || strings.Contains(p, "o-alice") {
		t.Fatalf("signed-out page:\n%s", p)
	}
	alice := browser(t)
	signIn(t, alice, srv.URL, "alice")
	p := page(alice)
	for _, want := range []string{`id="signed-in">alice<`, `id="pay-o-alice"`, `action="/account/orders/o-alice/pay"`, `id="order-o-alice-paid"`, `id="buy-demo"`} {
		if !strings.Contains(p, want) {
			t.Errorf("alice's page lacks %s", want)
		}
	}
	if strings.Contains(p, "o-bob") || strings.Contains(p, `id="pay-o-alice-paid"`) {
		t.Errorf("alice's page shows bob's order or a Pay button for a paid one:\n%s", p)
	}
}

func TestAFormPostFromAnotherSiteIsRefused(t *testing.T) {
	_, srv := newShop(t, "")
	for _, path := range []string{"/signin", "/signout", "/account/orders/o1/pay"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader("user=alice"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://evil.test")
		resp, err := browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("POST %s from another origin: %d, cookies %v; want 403 and none", path, resp.StatusCode, resp.Cookies())
		}
	}
	// The shop's own page posts with its own origin.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/signin", strings.NewReader("user=alice"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err := browser(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("same-origin sign-in: %d", resp.StatusCode)
	}
}

// The webhook list names buyers, their orders and their draw results: only
// the shop token opens it.
func TestTheWebhookListNeedsTheShopToken(t *testing.T) {
	s, srv := newShop(t, "")
	body := []byte(`{"id":"e1","type":"draw.won","sale_id":"d1","user_id":"alice","entry_id":"00000001"}`)
	deliver(t, srv.URL, body, contract.SignWebhook([]string{testSecret}, time.Now(), body))
	for name, auth := range map[string]string{"none": "", "wrong token": "Bearer nope", "basic": "Basic c2hvcDpzaG9w",
		"token without scheme": testShopToken, "token with a suffix": "Bearer " + testShopToken + "x"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/webhooks", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(b), "alice") {
			t.Errorf("%s: %d %s, want 401 without the list", name, resp.StatusCode, b)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/webhooks", nil)
	req.Header.Set("Authorization", "Bearer "+testShopToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "alice") {
		t.Fatalf("with the shop token: %d %s", resp.StatusCode, b)
	}
	// A shop without a token serves the list to nobody.
	s.cfg.ShopToken = ""
	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/webhooks", nil)
	req.Header.Set("Authorization", "Bearer ")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no shop token configured: %v %v", resp, err)
	}
}

// Over https the session cookie is __Host-seckill_session (Secure, Path=/,
// no Domain), and the shop reads only that name; on http://localhost it keeps the plain name.
func TestOverHTTPSTheSessionCookieHasTheHostPrefix(t *testing.T) {
	s, srv := newShopAt(t, "https://shop.example", "")
	if s.CookieName() != "__Host-seckill_session" {
		t.Fatalf("cookie name %q", s.CookieName())
	}
	resp := signIn(t, browser(t), srv.URL, "alice")
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == SecureCookieName {
			cookie = c
		}
		if c.Name == CookieName {
			t.Errorf("the plain-name cookie is set over https: %v", c)
		}
	}
	if cookie == nil || !cookie.Secure || cookie.Path != "/" || cookie.Domain != "" || !cookie.HttpOnly {
		t.Fatalf("cookie %+v in %v: want __Host-, Secure, Path=/, no Domain, HttpOnly", cookie, resp.Header["Set-Cookie"])
	}
	// The shop reads the prefixed cookie, and not the plain one (which any http page of a
	// sibling could set).
	tok, _ := s.Sessions().Issue("alice", time.Now())
	for name, want := range map[string]string{SecureCookieName: "alice", CookieName: ""} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(&http.Cookie{Name: name, Value: tok})
		if got := s.user(r); got != want {
			t.Errorf("cookie %s: user %q, want %q", name, got, want)
		}
	}
	if plain, _ := newShopAt(t, "http://localhost:8088", ""); plain.CookieName() != CookieName {
		t.Errorf("on http://localhost the cookie is %q, want %q", plain.CookieName(), CookieName)
	}
}

// The password-less sign-in needs -demo, and says what it means.
func TestTheShopStartsOnlyWithDemo(t *testing.T) {
	if _, err := ConfigFromFlags(flag.NewFlagSet("shop", flag.ContinueOnError), nil); err == nil || !strings.Contains(err.Error(), "-demo") {
		t.Fatalf("without -demo: %v", err)
	}
	c, err := ConfigFromFlags(flag.NewFlagSet("shop", flag.ContinueOnError), []string{"-demo"})
	if err != nil || !c.Demo {
		t.Fatalf("with -demo: %+v %v", c, err)
	}
	key, _ := LoadOrCreateKey("")
	if _, err := New(Config{PublicURL: "http://localhost:8088", SessionTTL: time.Hour}, key, nil); err == nil {
		t.Fatal("New without Demo")
	}
	if !strings.Contains(DemoNotice, "no password") {
		t.Fatalf("the notice does not say what -demo means: %q", DemoNotice)
	}
}

// deploy/Caddyfile.production-session's default session endpoint is
// this shop's GET /session (204 with X-User-ID for a session, 401 without); the file's comment
// names this shop's cookie, which differs from the file's default cookie name.
func TestTheSessionEndpointOfTheSessionCaddyfileIsTheShops(t *testing.T) {
	s, srv := newShop(t, "")
	tok, _ := s.Sessions().Issue("alice", time.Now())
	for name, c := range map[string]struct {
		hdr  map[string]string
		code int
		user string
	}{
		"the cookie":   {map[string]string{"Cookie": CookieName + "=" + tok}, http.StatusNoContent, "alice"},
		"bearer":       {map[string]string{"Authorization": "Bearer " + tok}, http.StatusNoContent, "alice"},
		"nothing":      {nil, http.StatusUnauthorized, ""},
		"a bad cookie": {map[string]string{"Cookie": CookieName + "=x.y.z"}, http.StatusUnauthorized, ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/session", nil)
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("X-User-ID") != c.user {
			t.Errorf("%s: %d %q, want %d %q", name, resp.StatusCode, resp.Header.Get("X-User-ID"), c.code, c.user)
		}
	}
	caddyfile, err := os.ReadFile("../../deploy/Caddyfile.production-session")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"{$SECKILL_SESSION_URL:http://127.0.0.1:3000/session}", "{$SECKILL_SESSION_USER_HEADER:X-User-ID}",
		"its cookie is\n#                              seckill_session"} {
		if !strings.Contains(string(caddyfile), want) {
			t.Errorf("deploy/Caddyfile.production-session does not default to the sample shop: no %s", want)
		}
	}
}

// The shop also checks the Standard Webhooks signature the backend sends beside
// Seckill-Signature, and says whether it matched.
func TestTheShopChecksTheStandardWebhooksSignatureToo(t *testing.T) {
	in := NewInbox(testSecret, 10)
	for _, c := range []struct {
		name     string
		sign     func(h http.Header, id string, body []byte)
		standard bool
	}{
		{"both", func(h http.Header, id string, body []byte) {
			contract.SignStandardWebhook(h, []string{testSecret}, id, time.Now(), body)
		}, true},
		{"signed under another id", func(h http.Header, _ string, body []byte) {
			contract.SignStandardWebhook(h, []string{testSecret}, "ev-other", time.Now(), body)
		}, false},
		{"another secret", func(h http.Header, id string, body []byte) {
			contract.SignStandardWebhook(h, []string{"not-the-shop-secret-at-all"}, id, time.Now(), body)
		}, false},
		{"Seckill-Signature only", func(http.Header, string, []byte) {}, false},
	} {
		order := "o9-" + strings.ReplaceAll(c.name, " ", "")
		body := event(contract.EventOrderCreated, order, "alice")
		req := httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(string(body)))
		req.Header.Set(contract.SignatureHeader, contract.SignWebhook([]string{testSecret}, time.Now(), body))
		c.sign(req.Header, "ev-"+contract.EventOrderCreated+"-"+order, body)
		rec := httptest.NewRecorder()
		in.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			t.Fatalf("%s: %d", c.name, rec.Code)
		}
		in.mu.Lock()
		d := in.deliveries[len(in.deliveries)-1]
		in.mu.Unlock()
		if !d.Verified || d.StandardVerified != c.standard {
			t.Errorf("%s: verified %v, standard_verified %v, want %v", c.name, d.Verified, d.StandardVerified, c.standard)
		}
	}
}

// The shop's page calls the gateway in the URL space the gateway was given (SECKILL_PREFIX,
// SECKILL_ORDERS_PREFIX read by both): the defaults, or the shop's own; a prefix the gateway
// would refuse stops the shop at start.
func TestThePageCallsTheGatewayUnderItsPrefix(t *testing.T) {
	key, err := LoadOrCreateKey("")
	if err != nil {
		t.Fatal(err)
	}
	page := func(prefix, orders string) string {
		s, err := New(Config{PublicURL: "http://shop.test", Sales: []string{"demo"}, SessionTTL: time.Hour, Events: 10, Demo: true,
			Prefix: prefix, OrdersPrefix: orders}, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		defer srv.Close()
		c := browser(t)
		signIn(t, c, srv.URL, "ann")
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := page("", ""); !strings.Contains(body, `const prefix = "/seckill", ordersPrefix = "/orders";`) {
		t.Errorf("the default URL space is not on the page:\n%.3000s", body)
	}
	if body := page("/shop-api/drop", "/shop-api/drop/orders"); !strings.Contains(body, `const prefix = "/shop-api/drop", ordersPrefix = "/shop-api/drop/orders";`) {
		t.Errorf("the shop's URL space is not on the page:\n%.3000s", body)
	}
	for _, bad := range []string{"seckill", "/seckill/", "/a/../b", "/a b"} {
		c := Config{PublicURL: "http://shop.test", SessionTTL: time.Hour, Demo: true, Prefix: bad}
		if err := c.Validate(); err == nil {
			t.Errorf("prefix %q passed", bad)
		}
	}
}
