//go:build integration

package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// deploy/Caddyfile.production, whole: a shop that signs its sessions and publishes its key
// (JWKS), the gateway in this process, the backend, Redis, RabbitMQ and Postgres.
func TestProductionCaddyfile(t *testing.T) {
	g := startStack(t, productionCaddyfile)

	t.Run("IdentityComesFromTheSignedSessionNeverFromTheClient", func(t *testing.T) { identity(t, g) })
	t.Run("AForgedExpiredOrForeignSessionIs401", func(t *testing.T) { badSessions(t, g) })
	t.Run("OrderPollsAreThrottledPerUserAndPerIP", func(t *testing.T) { ordersThrottled(t, g, true) })
	t.Run("AClientsOwnXForwardedForNeitherEscapesNorFillsAnIPZone", func(t *testing.T) { appendedForwardedFor(t, g) })
	concurrently(t,
		subtest{"ATrickledHeaderIsCutWithinTheLimit", func(t *testing.T) { trickledHeader(t, g) }},
		subtest{"NoRequestGetsA502OrANonJSONError", func(t *testing.T) { probe(t, g, true) }})
	t.Run("FailuresBehindTheGatewayAre503UnavailableWithRetryAfter", func(t *testing.T) { failuresBehind(t, g) })
	if n := g.Shop.lookups.Load(); n != 0 {
		t.Errorf("the gateway called the shop's session endpoint %d times; signed sessions need none", n)
	}
}

// deploy/Caddyfile.production-session, whole: a shop with opaque sessions and a session
// endpoint, asked through seckill_session's cache.
func TestProductionSessionCaddyfile(t *testing.T) {
	g := startStack(t, productionSessionCaddyfile)

	t.Run("IdentityComesFromTheSessionServiceNeverFromTheClient", func(t *testing.T) { identity(t, g) })
	t.Run("OneSessionsBurstIsOneCallToTheShop", func(t *testing.T) { oneLookupPerSession(t, g) })
	t.Run("OrderPollsAreThrottledPerUserAndPerIP", func(t *testing.T) { ordersThrottled(t, g, true) })
	concurrently(t,
		subtest{"ATrickledHeaderIsCutWithinTheLimit", func(t *testing.T) { trickledHeader(t, g) }},
		subtest{"NoRequestGetsA502OrANonJSONError", func(t *testing.T) { probe(t, g, true) }})
	t.Run("ARoomSaleSellsOnlyToBuyersTheRoomAdmitted", func(t *testing.T) { roomSale(t, g) })
	t.Run("ANonCanonicalOrdersPathNeverReachesTheBackend", func(t *testing.T) { canonicalOrders(t, g, true) })
	// Last: it stops the backend.
	t.Run("FailuresBehindTheGatewayAre503UnavailableWithRetryAfter", func(t *testing.T) { failuresBehind(t, g) })
}

// A sale created with a waiting room is served by the file's seckill_room, and its token and
// gate check admissions (require_admission): no token without an admission, a purchase for a
// buyer the room admitted. The identity is the session's, as everywhere in this file.
func roomSale(t *testing.T, g *gateway) {
	sale := g.newSaleWith(t, 5, `,"room":{"rate":1000,"session":"2m","difficulty":[0,0]}`)
	alice := client{Cookie: g.Shop.signIn(testenv.ID("alice")), IP: newIP()}

	if r := g.token(t, alice, sale); r.Status != http.StatusForbidden || r.Code != contract.CodeNotAdmitted {
		t.Fatalf("a token without an admission: %d %s", r.Status, r.Body)
	}
	entered := g.do(t, alice, http.MethodPost, "/seckill/"+sale+"/queue", nil)
	if entered.Status != http.StatusOK || entered.Ticket == "" {
		t.Fatalf("entering the room: %d %s", entered.Status, entered.Body)
	}
	state := entered.RoomState
	testenv.WaitFor(t, 20*time.Second, "alice's admission", func() bool {
		if state == "admitted" {
			return true
		}
		time.Sleep(time.Second) // the per-user window allows 5 requests a second
		r := g.do(t, alice, http.MethodGet, "/seckill/"+sale+"/queue", map[string]string{"X-Seckill-Ticket": entered.Ticket})
		state = r.RoomState
		return state == "admitted"
	})
	time.Sleep(time.Second) // a fresh per-user window for the token and the purchase
	tok := g.token(t, alice, sale)
	if tok.Status != http.StatusOK || tok.Token == "" {
		t.Fatalf("an admitted buyer's token: %d %s", tok.Status, tok.Body)
	}
	if r := g.buy(t, alice, sale, tok.Token); r.Status != http.StatusAccepted || r.OrderID == "" {
		t.Fatalf("an admitted buyer's purchase: %d %s", r.Status, r.Body)
	}
}

// The demo Caddyfile at the repository root (make run): the same timeouts, JSON errors and
// order-poll throttle.
func TestDemoCaddyfile(t *testing.T) {
	g := startStack(t, demoCaddyfile)

	t.Run("OrderPollsAreThrottledPerUser", func(t *testing.T) { ordersThrottled(t, g, false) })
	concurrently(t,
		subtest{"ATrickledHeaderIsCutWithinTheLimit", func(t *testing.T) { trickledHeader(t, g) }},
		subtest{"NoRequestGetsA502OrANonJSONError", func(t *testing.T) { probe(t, g, false) }})
	t.Run("ANonCanonicalOrdersPathNeverReachesTheBackend", func(t *testing.T) { canonicalOrders(t, g, false) })
}

// A client that says it is someone else (X-User-ID, or the retired X-Seckill-User) is itself
// to every part of the gateway: the token issuer, the gate, the throttle and /orders.
func identity(t *testing.T, g *gateway) {
	sale := g.newSale(t, 10)
	aliceID, malloryID := testenv.ID("alice"), testenv.ID("mallory")
	alice := client{Cookie: g.Shop.signIn(aliceID), IP: newIP()}
	mallory := client{Bearer: g.Shop.signIn(malloryID), IP: newIP(), Claim: aliceID}

	tok := g.token(t, alice, sale)
	if tok.Status != http.StatusOK || tok.Token == "" {
		t.Fatalf("alice's token: %d %s", tok.Status, tok.Body)
	}
	bought := g.buy(t, alice, sale, tok.Token)
	if bought.Status != http.StatusAccepted || bought.OrderID == "" {
		t.Fatalf("alice's purchase: %d %s", bought.Status, bought.Body)
	}
	aliceOrder := bought.OrderID

	// /orders: alice sees her order; mallory, claiming to be alice, does not, and cannot pay it.
	if r := g.do(t, alice, http.MethodGet, "/orders/"+aliceOrder, nil); r.Status != http.StatusOK || r.OrderID != aliceOrder {
		t.Fatalf("alice's own order: %d %s", r.Status, r.Body)
	}
	if r := g.do(t, mallory, http.MethodGet, "/orders/"+aliceOrder, nil); r.Status != http.StatusNotFound || r.Code != contract.CodeUnknownOrder {
		t.Fatalf("mallory claiming alice read alice's order: %d %s", r.Status, r.Body)
	}
	if r := g.do(t, mallory, http.MethodPost, "/orders/"+aliceOrder+"/pay", nil); r.Status == http.StatusOK {
		t.Fatalf("mallory claiming alice paid alice's order: %s", r.Body)
	}

	// Token and gate: were mallory alice, the gate would answer already_bought with alice's
	// order. She is herself: a token of her own and a new order.
	mt := g.token(t, mallory, sale)
	if mt.Status != http.StatusOK {
		t.Fatalf("mallory's token: %d %s", mt.Status, mt.Body)
	}
	if r := g.buy(t, alice, sale, mt.Token); r.Code != contract.CodeInvalidToken && r.Code != contract.CodeAlreadyBought {
		t.Fatalf("mallory's token is not bound to mallory: alice bought with it: %d %s", r.Status, r.Body)
	}
	mb := g.buy(t, mallory, sale, mt.Token)
	if mb.Status != http.StatusAccepted || mb.OrderID == aliceOrder {
		t.Fatalf("mallory's purchase while claiming alice: %d %s (alice's order %s)", mb.Status, mb.Body, aliceOrder)
	}
	if r := g.do(t, client{Cookie: alice.Cookie, IP: alice.IP}, http.MethodGet, "/orders/"+mb.OrderID, nil); r.Status != http.StatusNotFound {
		t.Fatalf("alice sees mallory's order: %d %s", r.Status, r.Body)
	}

	// Throttle: mallory hammers the token endpoint claiming alice. Her own window fills; alice's
	// does not.
	limited := 0
	for _, r := range g.burst(t, 12, mallory, http.MethodPost, "/seckill/"+sale+"/token") {
		if r.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("12 token requests at once were never throttled (user zone limit 5/s)")
	}
	// Alice bought above, so the token endpoint tells her so (409 already_bought with her order)
	// instead of minting; what matters here is that she is not rate limited.
	if r := g.token(t, alice, sale); r.Status == http.StatusTooManyRequests ||
		(r.Status != http.StatusOK && !(r.Status == http.StatusConflict && r.Code == contract.CodeAlreadyBought)) {
		t.Fatalf("alice was throttled by mallory's burst under her name: %d %s", r.Status, r.Body)
	}

	// No session at all: a claimed identity is worth nothing, everywhere, and the refusal is the
	// contract's JSON even though the shop answered with HTML.
	anon := client{IP: newIP(), Claim: aliceID}
	for _, rq := range [][2]string{
		{http.MethodPost, "/seckill/" + sale + "/token"},
		{http.MethodPost, "/seckill/" + sale + "/buy"},
		{http.MethodGet, "/orders/" + aliceOrder},
	} {
		if r := g.do(t, anon, rq[0], rq[1], nil); r.Status != http.StatusUnauthorized || r.Code != contract.CodeUnauthenticated {
			t.Errorf("%s %s without a session: %d %s", rq[0], rq[1], r.Status, r.Body)
		}
	}

	// The shop's own pages never receive an identity header, even when the client sends one.
	before := g.Shop.sawIdentity.Load()
	if r := g.do(t, mallory, http.MethodGet, "/products/1", nil); r.Status != http.StatusOK {
		t.Fatalf("shop page: %d %s", r.Status, r.Body)
	}
	if g.Shop.sawIdentity.Load() != before {
		t.Fatal("the shop received a client's X-User-ID")
	}
}

// Order-status polls count in their own zones: per user (both files) and per IP (production;
// the demo's IP zones only report, since all its traffic comes from loopback).
func ordersThrottled(t *testing.T, g *gateway, production bool) {
	newUser := func() client {
		if production {
			return client{Cookie: g.Shop.signIn(testenv.ID("u")), IP: newIP()}
		}
		return client{Claim: testenv.ID("u"), IP: newIP()}
	}
	order := "/orders/" + uuid.NewString()
	poll := func(c client) reply { return g.do(t, c, http.MethodGet, order, nil) }

	// One user polling fast: refused after the zone's limit (20 per 10 s), with Retry-After.
	var refused *reply
	for _, r := range g.burst(t, 30, newUser(), http.MethodGet, order) {
		switch r.Status {
		case http.StatusTooManyRequests:
			refused = &r
		case http.StatusNotFound:
		default:
			t.Fatalf("poll: %d %s", r.Status, r.Body)
		}
	}
	if refused == nil {
		t.Fatal("30 order polls at once from one user were never throttled")
	}
	if refused.Code != contract.CodeRateLimited || refused.RetryAfter == "" {
		t.Fatalf("refusal: %s (Retry-After %q)", refused.Body, refused.RetryAfter)
	}
	if r := poll(newUser()); r.Status != http.StatusNotFound {
		t.Fatalf("another user was throttled by the first one's polls: %d %s", r.Status, r.Body)
	}
	if !production {
		return
	}

	// Many users behind one address, none over its own limit: the IP zone (60 per 10 s) stops
	// them.
	ip := newIP()
	limited := 0
	for range 5 {
		c := newUser()
		c.IP = ip
		for _, r := range g.burst(t, 15, c, http.MethodGet, order) {
			if r.Status == http.StatusTooManyRequests {
				limited++
			}
		}
	}
	if limited == 0 {
		t.Fatal("75 polls from one address (5 users x 15) were never throttled by the IP zone")
	}
}

// Sessions the shop did not sign, or not for us, or not now: 401 unauthenticated everywhere,
// whatever X-User-ID the client adds.
func badSessions(t *testing.T, g *gateway) {
	sale := g.newSale(t, 5)
	now := time.Now()
	forger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(mod func(*jwt.Claims)) jwt.Claims {
		c := jwt.Claims{Issuer: g.Shop.srv.URL, Audience: jwt.Audience{shopAudience}, Subject: testenv.ID("alice"),
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
		mod(&c)
		return c
	}
	for name, tok := range map[string]string{
		"signed by another key":  g.Shop.sign(claims(func(*jwt.Claims) {}), forger),
		"expired":                g.Shop.sign(claims(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Hour)) }), g.Shop.key),
		"for another audience":   g.Shop.sign(claims(func(c *jwt.Claims) { c.Audience = jwt.Audience{"shop-api"} }), g.Shop.key),
		"from another issuer":    g.Shop.sign(claims(func(c *jwt.Claims) { c.Issuer = "https://evil.example" }), g.Shop.key),
		"user not a contract id": g.Shop.sign(claims(func(c *jwt.Claims) { c.Subject = "alice/../bob" }), g.Shop.key),
	} {
		c := client{Cookie: tok, IP: newIP(), Claim: testenv.ID("alice")}
		for _, rq := range [][2]string{
			{http.MethodPost, "/seckill/" + sale + "/token"},
			{http.MethodGet, "/orders/" + uuid.NewString()},
		} {
			if r := g.do(t, c, rq[0], rq[1], nil); r.Status != http.StatusUnauthorized || r.Code != contract.CodeUnauthenticated {
				t.Errorf("%s, %s %s: %d %s", name, rq[0], rq[1], r.Status, r.Body)
			}
		}
	}
}

// A buyer's burst costs the shop's session endpoint one call: seckill_session's cache and
// single flight.
func oneLookupPerSession(t *testing.T, g *gateway) {
	c := client{Cookie: g.Shop.signIn(testenv.ID("u")), IP: newIP()}
	before := g.Shop.lookups.Load()
	for _, r := range g.burst(t, 15, c, http.MethodGet, "/orders/"+uuid.NewString()) {
		if r.Status != http.StatusNotFound {
			t.Fatalf("poll: %d %s", r.Status, r.Body)
		}
	}
	if n := g.Shop.lookups.Load() - before; n != 1 {
		t.Fatalf("15 requests of one session made %d calls to the shop's session endpoint, want 1", n)
	}
}

// What is behind the gateway fails: the client gets the contract's 503, never a bare 502. With
// signed sessions the shop being down does not stop the sale.
func failuresBehind(t *testing.T, g *gateway) {
	user := client{Cookie: g.Shop.signIn(testenv.ID("u")), IP: newIP()}
	late := client{Cookie: g.Shop.signIn(testenv.ID("u")), IP: newIP()} // first seen once the shop is down
	check := func(what string, r reply) {
		t.Helper()
		if r.Status != http.StatusServiceUnavailable || r.Code != contract.CodeUnavailable || r.RetryAfter == "" {
			t.Errorf("%s: %d %s (Retry-After %q), want 503 unavailable with Retry-After", what, r.Status, r.Body, r.RetryAfter)
		}
	}
	if !g.Shop.signed {
		// The session service answers 500 with an HTML page.
		check("session service error", g.do(t, client{Cookie: "session-service-broken", IP: newIP()}, http.MethodGet, "/orders/"+uuid.NewString(), nil))
	}

	// The backend is down.
	g.stopBack()
	check("backend down", g.do(t, user, http.MethodGet, "/orders/"+uuid.NewString(), nil))

	// The shop is down.
	g.Shop.srv.Close()
	r := g.do(t, late, http.MethodPost, "/seckill/s1/token", nil)
	if !g.Shop.signed {
		check("session service down", r)
		return
	}
	// Its session is verified with the keys fetched before: the token endpoint decides (no
	// such sale here), not the identity.
	if r.Status != http.StatusNotFound || r.Code != contract.CodeUnknownSale {
		t.Errorf("a signed session while the shop is down: %d %s, want 404 unknown_sale", r.Status, r.Body)
	}
}
