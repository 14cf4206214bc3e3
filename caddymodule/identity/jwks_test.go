package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/seckilledge/seckill/internal/testenv"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// jwksVerifier verifies sessions with the keys the shop publishes, fetched by a JWKS source
// that refreshes every refresh and fetches early at most once per minInterval of clock.
func jwksVerifier(t *testing.T, shop *testShop, refresh, minInterval time.Duration, clock *fakeClock) (*Verifier, *JWKS) {
	t.Helper()
	now := time.Now
	if clock != nil {
		now = clock.now
	}
	j := newJWKS(shop.url(), shop.srv.Client(), refresh, minInterval, nopLogger, now)
	t.Cleanup(func() { _ = j.Destruct() })
	return &Verifier{Keys: j, Issuer: testIssuer, Audience: testAudience, Leeway: 30 * time.Second}, j
}

// verifyConcurrently verifies token from n goroutines at once and returns the outcomes.
func verifyConcurrently(v *Verifier, token string, n int) map[Outcome]int {
	var mu sync.Mutex
	got := map[Outcome]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, o := v.Verify(context.Background(), token)
			mu.Lock()
			got[o]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return got
}

// A flood of tokens with kids nobody published costs the shop's JWKS endpoint one fetch per
// interval, however many arrive.
func TestUnknownKidsRefetchTheJWKSAtMostOncePerInterval(t *testing.T) {
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	clock := newFakeClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	expect(t, v, "k1", session(t, k1, "alice"), Verified)
	if n := shop.hits.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}

	forged := session(t, newKey(t, "k-random", jose.ES256), "alice")
	// Right after a fetch: none.
	if got := verifyConcurrently(v, forged, 50); got[UnknownKey] != 50 {
		t.Fatalf("outcomes %v", got)
	}
	if n := shop.hits.Load(); n != 1 {
		t.Fatalf("%d fetches within the interval of the first, want 1", n)
	}
	// An interval later: exactly one for 50 concurrent requests (they wait for it together).
	for round := int64(2); round <= 3; round++ {
		clock.advance(15 * time.Second)
		if got := verifyConcurrently(v, forged, 50); got[UnknownKey] != 50 {
			t.Fatalf("outcomes %v", got)
		}
		if n := shop.hits.Load(); n != round {
			t.Fatalf("round %d: %d fetches, want %d", round, n, round)
		}
	}
	if j.fetches.Load() != 3 {
		t.Fatalf("the source counted %d fetches", j.fetches.Load())
	}
}

// The shop rotates mid-sale: it publishes k2 and signs new sessions with it at once. The
// first k2 session makes the gateway fetch early; k1 sessions keep working until the shop drops
// k1 from its JWKS.
func TestAKeyRotatedMidSaleIsPickedUpByItsFirstSession(t *testing.T) {
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	clock := newFakeClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	old := session(t, k1, "alice")
	expect(t, v, "k1 before the rotation", old, Verified)

	clock.advance(time.Minute)
	k2 := shop.publish(newKey(t, "k2", jose.EdDSA))
	expect(t, v, "k2's first session", session(t, k2, "alice"), Verified)
	expect(t, v, "k1 during the rotation", old, Verified)
	if n := shop.hits.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (start, k2's first session)", n)
	}

	// The longest session has ended: the shop drops k1; the next refresh forgets it.
	shop.unpublish("k1")
	clock.advance(time.Minute)
	j.fetchEarly(context.Background())
	expect(t, v, "k1 after it was dropped", old, UnknownKey)
	expect(t, v, "k2 after the rotation", session(t, k2, "alice"), Verified)
}

// The JWKS endpoint is down when the gateway starts: nothing verifies (503, not 401: the
// buyer's session may be fine), and the keys load as soon as the endpoint answers.
func TestWithTheJWKSDownAtStartSessionsAreUnavailableUntilItAnswers(t *testing.T) {
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	shop.down.Store(true)
	v, _ := jwksVerifier(t, shop, time.Hour, 15*time.Second, nil)
	tok := session(t, k1, "alice")
	expect(t, v, "endpoint down", tok, NoKeys)
	expect(t, v, "endpoint still down", tok, NoKeys)

	shop.down.Store(false)
	// The retry comes within a second or two (firstRetry, doubling), not a refresh later.
	testenv.WaitFor(t, 5*time.Second, "the keys to load once the endpoint is back", func() bool {
		_, o := v.Verify(context.Background(), tok)
		return o == Verified
	})
}

// The JWKS endpoint goes down mid-sale: every refresh fails, the last good keys keep working.
func TestWithTheJWKSDownMidSaleTheLastGoodKeysKeepWorking(t *testing.T) {
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	v, _ := jwksVerifier(t, shop, 20*time.Millisecond, time.Millisecond, nil)
	tok := session(t, k1, "alice")
	expect(t, v, "endpoint up", tok, Verified)

	shop.down.Store(true)
	before, failures := shop.hits.Load(), counter(t, jwksFetches.WithLabelValues("error"))
	testenv.WaitFor(t, 5*time.Second, "three failed refreshes", func() bool { return shop.hits.Load() >= before+3 })
	if got := counter(t, jwksFetches.WithLabelValues("error")) - failures; got < 2 {
		t.Errorf("seckill_identity_jwks_fetches_total{result=\"error\"} rose by %v over 3 failed refreshes", got)
	}
	expect(t, v, "endpoint down, known kid", tok, Verified)
	// An unknown kid fetches early, which fails too: refused, and the known keys stay.
	expect(t, v, "endpoint down, unknown kid", session(t, newKey(t, "k9", jose.ES256), "alice"), UnknownKey)
	expect(t, v, "endpoint down, known kid again", tok, Verified)

	// A document without a usable key is a failure too: it does not replace the good one.
	shop.down.Store(false)
	shop.unpublish("k1")
	shop.publish(testKey{kid: "hmac", alg: jose.HS256, priv: nil, hmac: []byte("0123456789abcdef0123456789abcdef")})
	before = shop.hits.Load()
	testenv.WaitFor(t, 5*time.Second, "two refreshes of an unusable document", func() bool { return shop.hits.Load() >= before+2 })
	expect(t, v, "after an unusable document", tok, Verified)
}

// A config reload joins the fetcher of the same URL: no new fetch, and the keys survive even
// when the endpoint is down during the reload.
func TestAReloadKeepsTheJWKSFetcherAndItsKeys(t *testing.T) {
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	cfg := func() *JWT {
		p := &JWT{JWKSURL: shop.url(), Issuer: testIssuer, Audience: testAudience}
		if err := p.setup(p.pooledJWKS); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := cfg()
	expect(t, first.verifier, "first config", session(t, k1, "alice"), Verified)

	shop.down.Store(true)
	second := cfg() // the new config is provisioned before the old one is cleaned up
	if err := first.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if second.jwks != first.jwks {
		t.Fatal("the reload started a second fetcher for the same URL")
	}
	expect(t, second.verifier, "after the reload, endpoint down", session(t, k1, "alice"), Verified)
	if n := shop.hits.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	if err := second.Cleanup(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.jwks.done:
	default:
		t.Fatal("the fetcher still runs after the last config using it was cleaned up")
	}
}

// noBackgroundRetry takes the background retry out of the way while no key is usable, so the
// only fetches the test sees are those its requests cause.
func noBackgroundRetry(t *testing.T) {
	saved := coldRetry
	coldRetry.first, coldRetry.most = time.Hour, time.Hour
	t.Cleanup(func() { coldRetry = saved })
}

// Issue 33, item 2: a gateway that started with the JWKS down served nobody until its
// background retry, which had doubled up to jwks_refresh (5 min). Now a request may fetch
// while no key is loaded, still at most once per jwks_min_interval: buyers are served within
// an interval of the shop coming back, and a flood while it is down costs it one fetch per
// interval.
func TestAfterAColdStartBuyersAreServedWithinTheMinIntervalOfTheJWKSComingBack(t *testing.T) {
	noBackgroundRetry(t)
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	shop.down.Store(true)
	clock := newFakeClock()
	v, _ := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	tok := session(t, k1, "alice")
	if got := verifyConcurrently(v, tok, 50); got[NoKeys] != 50 {
		t.Fatalf("JWKS down: outcomes %v", got)
	}
	if n := shop.hits.Load(); n != 1 {
		t.Fatalf("%d fetches within the first interval, want 1 (the start)", n)
	}
	// Down, an interval later: 50 buyers cost the shop one fetch.
	clock.advance(15 * time.Second)
	if got := verifyConcurrently(v, tok, 50); got[NoKeys] != 50 {
		t.Fatalf("JWKS still down: outcomes %v", got)
	}
	if n := shop.hits.Load(); n != 2 {
		t.Fatalf("%d fetches after two intervals, want 2", n)
	}

	shop.down.Store(false)
	expect(t, v, "back, within the interval of the last fetch", tok, NoKeys)
	clock.advance(15 * time.Second)
	if got := verifyConcurrently(v, tok, 50); got[Verified] != 50 {
		t.Fatalf("JWKS back an interval later: outcomes %v", got)
	}
	if n := shop.hits.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
}

// The background retry while nothing is loaded doubles from 1s but never past a few seconds,
// however long jwks_refresh is.
func TestTheColdStartRetryIsCappedAtAFewSeconds(t *testing.T) {
	for _, c := range []struct {
		refresh time.Duration
		want    []time.Duration
	}{
		{5 * time.Minute, []time.Duration{1, 2, 4, 4, 4}},
		{time.Hour, []time.Duration{1, 2, 4, 4}},
		{2 * time.Second, []time.Duration{1, 2, 2, 2}},
	} {
		retry := time.Second
		for i, w := range c.want {
			var wait time.Duration
			wait, retry = nextColdRetry(retry, c.refresh, 4*time.Second)
			if wait != w*time.Second {
				t.Errorf("refresh %v, retry %d: wait %v, want %v", c.refresh, i+1, wait, w*time.Second)
			}
		}
	}
	if coldRetry.first != time.Second || coldRetry.most != 4*time.Second {
		t.Errorf("cold retry %v", coldRetry)
	}
}

// Issue 33, item 7: while every refresh fails, the last good keys are used for at most
// jwks_max_stale; then sessions are 503 until the shop answers again (a key the shop dropped
// must not stay trusted forever because its JWKS is unreachable).
func TestKeysOlderThanMaxStaleAreDroppedUntilTheJWKSAnswers(t *testing.T) {
	noBackgroundRetry(t)
	shop := newTestShop(t)
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	clock := newFakeClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	tok := session(t, k1, "alice")
	expect(t, v, "fresh keys", tok, Verified)

	shop.down.Store(true)
	clock.advance(DefaultJWKSMaxStale - time.Second)
	expect(t, v, "down, just under max_stale", tok, Verified)
	clock.advance(2 * time.Second)
	expect(t, v, "down, past max_stale", tok, NoKeys)
	shop.down.Store(false)
	expect(t, v, "back, within the interval of the last fetch", tok, NoKeys)
	clock.advance(15 * time.Second)
	expect(t, v, "back", tok, Verified)

	// A shorter max_stale from a newer config applies at once.
	j.configure(time.Hour, 15*time.Second, time.Minute, nopLogger)
	shop.down.Store(true)
	clock.advance(61 * time.Second)
	expect(t, v, "max_stale 1m, down for 61s", tok, NoKeys)
}

// Issue 33, item 7: plain http to anything but this machine is refused unless
// jwks_allow_http says otherwise.
func TestAPlainHTTPJWKSOffLoopbackIsRefusedUnlessAllowed(t *testing.T) {
	for _, c := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"https://shop.example/.well-known/jwks.json", false, true},
		{"http://127.0.0.1:3000/.well-known/jwks.json", false, true},
		{"http://127.9.9.9:3000/jwks.json", false, true},
		{"http://localhost:3000/jwks.json", false, true},
		{"http://[::1]:3000/jwks.json", false, true},
		{"http://[::ffff:127.0.0.1]:3000/jwks.json", false, true},
		{"http://shop.example/.well-known/jwks.json", false, false},
		{"http://10.0.0.5/jwks.json", false, false},
		{"http://127.0.0.1.nip.io/jwks.json", false, false},
		{"http://localhost.evil.example/jwks.json", false, false},
		{"http://shop.example/.well-known/jwks.json", true, true},
	} {
		p := &JWT{JWKSURL: c.url, JWKSAllowHTTP: c.allow}
		err := p.setup(func(string) (*JWKS, error) { return nil, nil })
		if (err == nil) != c.ok {
			t.Errorf("%s (allow %v): %v", c.url, c.allow, err)
		}
	}
}

// Issue 33, item 7: a redirect of the JWKS fetch from https to plain http is not followed
// (the keys would travel unauthenticated); one that stays on https is.
func TestAJWKSRedirectIsFollowedOnlyIfItStaysOnHTTPS(t *testing.T) {
	shop := newTestShop(t) // plain http
	k1 := shop.publish(newKey(t, "k1", jose.ES256))
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			http.Redirect(w, r, shop.url(), http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/jwks.json", http.StatusMovedPermanently)
		case "/jwks.json":
			_, _ = w.Write(shop.jwks())
		}
	}))
	t.Cleanup(tls.Close)
	client := &http.Client{Transport: tls.Client().Transport, CheckRedirect: jwksClient.CheckRedirect}
	tok := session(t, k1, "alice")
	for path, want := range map[string]Outcome{"/down": NoKeys, "/moved": Verified} {
		j := newJWKS(tls.URL+path, client, time.Hour, time.Hour, nopLogger, nil)
		v := &Verifier{Keys: j, Issuer: testIssuer, Audience: testAudience}
		expect(t, v, path, tok, want)
		_ = j.Destruct()
	}
	if n := shop.hits.Load(); n != 0 {
		t.Errorf("the plain-http JWKS was fetched %d times through a redirect from https", n)
	}
	// And the rule itself: never from https to http, to http only on loopback.
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"https://shop.example/a", "https://cdn.example/b", true},
		{"https://shop.example/a", "http://cdn.example/b", false},
		{"https://127.0.0.1/a", "http://127.0.0.1/b", false},
		{"http://127.0.0.1/a", "http://127.0.0.1:3000/b", true},
		{"http://127.0.0.1/a", "http://shop.example/b", false},
	} {
		from, _ := http.NewRequest(http.MethodGet, c.from, nil)
		to, _ := http.NewRequest(http.MethodGet, c.to, nil)
		if err := noDowngrade(to, []*http.Request{from}); (err == nil) != c.ok {
			t.Errorf("%s -> %s: %v", c.from, c.to, err)
		}
	}
}
