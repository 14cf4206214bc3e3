package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
	"github.com/seckilledge/seckill/internal/testenv"
)

var nopLogger = zap.NewNop()

// jwksVerifier verifies sessions with the keys the shop publishes, fetched by a JWKS source
// that refreshes every refresh and fetches early at most once per minInterval of clock.
func jwksVerifier(t *testing.T, shop *shoptest.Shop, refresh, minInterval time.Duration, clock *shoptest.Clock) (*Verifier, *JWKS) {
	t.Helper()
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	j := NewJWKS(shop.URL(), shop.Srv.Client(), refresh, minInterval, nopLogger, now)
	t.Cleanup(func() { _ = j.Destruct() })
	return &Verifier{Keys: j, Issuer: shoptest.Issuer, Audience: shoptest.Audience, Leeway: 30 * time.Second}, j
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
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	clock := shoptest.NewClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	expect(t, v, "k1", shoptest.Session(t, k1, "alice"), Verified)
	if n := shop.Hits.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}

	forged := shoptest.Session(t, shoptest.NewKey(t, "k-random", jose.ES256), "alice")
	// Right after a fetch: none.
	if got := verifyConcurrently(v, forged, 50); got[UnknownKey] != 50 {
		t.Fatalf("Outcomes %v", got)
	}
	if n := shop.Hits.Load(); n != 1 {
		t.Fatalf("%d fetches within the interval of the first, want 1", n)
	}
	// An interval later: exactly one for 50 concurrent requests (they wait for it together).
	for round := int64(2); round <= 3; round++ {
		clock.Advance(15 * time.Second)
		if got := verifyConcurrently(v, forged, 50); got[UnknownKey] != 50 {
			t.Fatalf("Outcomes %v", got)
		}
		if n := shop.Hits.Load(); n != round {
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
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	clock := shoptest.NewClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	old := shoptest.Session(t, k1, "alice")
	expect(t, v, "k1 before the rotation", old, Verified)

	clock.Advance(time.Minute)
	k2 := shop.Publish(shoptest.NewKey(t, "k2", jose.EdDSA))
	expect(t, v, "k2's first session", shoptest.Session(t, k2, "alice"), Verified)
	expect(t, v, "k1 during the rotation", old, Verified)
	if n := shop.Hits.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (start, k2's first session)", n)
	}

	// The longest session has ended: the shop drops k1; the next refresh forgets it.
	shop.Unpublish("k1")
	clock.Advance(time.Minute)
	j.fetchEarly(context.Background())
	expect(t, v, "k1 after it was dropped", old, UnknownKey)
	expect(t, v, "k2 after the rotation", shoptest.Session(t, k2, "alice"), Verified)
}

// The JWKS endpoint is down when the gateway starts: nothing verifies (503, not 401: the
// buyer's session may be fine), and the keys load as soon as the endpoint answers.
func TestWithTheJWKSDownAtStartSessionsAreUnavailableUntilItAnswers(t *testing.T) {
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	shop.Down.Store(true)
	v, _ := jwksVerifier(t, shop, time.Hour, 15*time.Second, nil)
	tok := shoptest.Session(t, k1, "alice")
	expect(t, v, "endpoint down", tok, NoKeys)
	expect(t, v, "endpoint still down", tok, NoKeys)

	shop.Down.Store(false)
	// The retry comes within a second or two (firstRetry, doubling), not a refresh later.
	testenv.WaitFor(t, 5*time.Second, "the keys to load once the endpoint is back", func() bool {
		_, o := v.Verify(context.Background(), tok)
		return o == Verified
	})
}

// The JWKS endpoint goes down mid-sale: every refresh fails, the last good keys keep working.
func TestWithTheJWKSDownMidSaleTheLastGoodKeysKeepWorking(t *testing.T) {
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	v, _ := jwksVerifier(t, shop, 20*time.Millisecond, time.Millisecond, nil)
	tok := shoptest.Session(t, k1, "alice")
	expect(t, v, "endpoint up", tok, Verified)

	shop.Down.Store(true)
	before, failures := shop.Hits.Load(), shoptest.Counter(t, jwksFetches.WithLabelValues("error"))
	testenv.WaitFor(t, 5*time.Second, "three failed refreshes", func() bool { return shop.Hits.Load() >= before+3 })
	if got := shoptest.Counter(t, jwksFetches.WithLabelValues("error")) - failures; got < 2 {
		t.Errorf("seckill_identity_jwks_fetches_total{result=\"error\"} rose by %v over 3 failed refreshes", got)
	}
	expect(t, v, "endpoint down, known kid", tok, Verified)
	// An unknown kid fetches early, which fails too: refused, and the known keys stay.
	expect(t, v, "endpoint down, unknown kid", shoptest.Session(t, shoptest.NewKey(t, "k9", jose.ES256), "alice"), UnknownKey)
	expect(t, v, "endpoint down, known kid again", tok, Verified)

	// A document without a usable key is a failure too: it does not replace the good one.
	shop.Down.Store(false)
	shop.Unpublish("k1")
	shop.Publish(shoptest.Key{Kid: "hmac", Alg: jose.HS256, Priv: nil, HMAC: []byte("0123456789abcdef0123456789abcdef")})
	before = shop.Hits.Load()
	testenv.WaitFor(t, 5*time.Second, "two refreshes of an unusable document", func() bool { return shop.Hits.Load() >= before+2 })
	expect(t, v, "after an unusable document", tok, Verified)
}

// noBackgroundRetry takes the background retry out of the way while no key is usable, so the
// only fetches the test sees are those its requests cause.
func noBackgroundRetry(t *testing.T) {
	saved := coldRetry
	coldRetry.first, coldRetry.most = time.Hour, time.Hour
	t.Cleanup(func() { coldRetry = saved })
}

// A gateway that started with the JWKS down served nobody until its
// background retry, which had doubled up to jwks_refresh (5 min). Now a request may fetch
// while no key is loaded, still at most once per jwks_min_interval: buyers are served within
// an interval of the shop coming back, and a flood while it is down costs it one fetch per
// interval.
func TestAfterAColdStartBuyersAreServedWithinTheMinIntervalOfTheJWKSComingBack(t *testing.T) {
	noBackgroundRetry(t)
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	shop.Down.Store(true)
	clock := shoptest.NewClock()
	v, _ := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	tok := shoptest.Session(t, k1, "alice")
	if got := verifyConcurrently(v, tok, 50); got[NoKeys] != 50 {
		t.Fatalf("JWKS down: Outcomes %v", got)
	}
	if n := shop.Hits.Load(); n != 1 {
		t.Fatalf("%d fetches within the first interval, want 1 (the start)", n)
	}
	// Down, an interval later: 50 buyers cost the shop one fetch.
	clock.Advance(15 * time.Second)
	if got := verifyConcurrently(v, tok, 50); got[NoKeys] != 50 {
		t.Fatalf("JWKS still down: Outcomes %v", got)
	}
	if n := shop.Hits.Load(); n != 2 {
		t.Fatalf("%d fetches after two intervals, want 2", n)
	}

	shop.Down.Store(false)
	expect(t, v, "back, within the interval of the last fetch", tok, NoKeys)
	clock.Advance(15 * time.Second)
	if got := verifyConcurrently(v, tok, 50); got[Verified] != 50 {
		t.Fatalf("JWKS back an interval later: Outcomes %v", got)
	}
	if n := shop.Hits.Load(); n != 3 {
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

// While every refresh fails, the last good keys are used for at most
// jwks_max_stale; then sessions are 503 until the shop answers again (a key the shop dropped
// must not stay trusted forever because its JWKS is unreachable).
func TestKeysOlderThanMaxStaleAreDroppedUntilTheJWKSAnswers(t *testing.T) {
	noBackgroundRetry(t)
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	clock := shoptest.NewClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	tok := shoptest.Session(t, k1, "alice")
	expect(t, v, "fresh keys", tok, Verified)

	shop.Down.Store(true)
	clock.Advance(DefaultJWKSMaxStale - time.Second)
	expect(t, v, "down, just under max_stale", tok, Verified)
	clock.Advance(2 * time.Second)
	expect(t, v, "down, past max_stale", tok, NoKeys)
	shop.Down.Store(false)
	expect(t, v, "back, within the interval of the last fetch", tok, NoKeys)
	clock.Advance(15 * time.Second)
	expect(t, v, "back", tok, Verified)

	// A shorter max_stale from a newer config applies at once.
	j.Configure(time.Hour, 15*time.Second, time.Minute, nopLogger)
	shop.Down.Store(true)
	clock.Advance(61 * time.Second)
	expect(t, v, "max_stale 1m, down for 61s", tok, NoKeys)
}

// A redirect of the JWKS fetch from https to plain http is not followed
// (the keys would travel unauthenticated); one that stays on https is.
func TestAJWKSRedirectIsFollowedOnlyIfItStaysOnHTTPS(t *testing.T) {
	shop := shoptest.NewShop(t) // plain http
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			http.Redirect(w, r, shop.URL(), http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/jwks.json", http.StatusMovedPermanently)
		case "/jwks.json":
			_, _ = w.Write(shop.JWKS())
		}
	}))
	t.Cleanup(tls.Close)
	client := &http.Client{Transport: tls.Client().Transport, CheckRedirect: JWKSClient.CheckRedirect}
	tok := shoptest.Session(t, k1, "alice")
	for path, want := range map[string]Outcome{"/down": NoKeys, "/moved": Verified} {
		j := NewJWKS(tls.URL+path, client, time.Hour, time.Hour, nopLogger, nil)
		v := &Verifier{Keys: j, Issuer: shoptest.Issuer, Audience: shoptest.Audience}
		expect(t, v, path, tok, want)
		_ = j.Destruct()
	}
	if n := shop.Hits.Load(); n != 0 {
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
