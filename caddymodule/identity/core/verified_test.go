package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// cached gives v a cache of max sessions.
func cached(v *Verifier, max int) *Verifier {
	v.Cache = NewVerifiedCache(max)
	return v
}

// signatureChecks is the number of signatures v has checked so far.
func signatureChecks(v *Verifier) int64 { return v.signatures.Load() }

// A buyer in a rush sends the same session many times a second: its signature is checked once,
// and every later request gets the same user from the cache, without allocating.
func TestASessionSentAgainIsAnsweredWithoutAnotherSignatureCheck(t *testing.T) {
	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.ES256)
	v := cached(staticVerifier(t, now, k), 100)
	alice := shoptest.At(t, k, now, now.Add(time.Hour))
	hits := shoptest.Counter(t, jwtCacheHits)
	for range 5 {
		expect(t, v, "alice", alice, Verified)
	}
	if n := signatureChecks(v); n != 1 {
		t.Fatalf("%d signature checks for 5 requests of one session, want 1", n)
	}
	if got := shoptest.Counter(t, jwtCacheHits) - hits; got != 4 {
		t.Errorf("seckill_identity_jwt_cache_total{result=\"hit\"} rose by %v, want 4", got)
	}
	// Another session is its own entry: bob is not alice.
	bob := shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "bob",
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}})
	for range 2 {
		if user, o := v.Verify(context.Background(), bob); o != Verified || user != "bob" {
			t.Fatalf("bob: %s %q", o, user)
		}
	}
	if n := signatureChecks(v); n != 2 {
		t.Fatalf("%d signature checks, want 2 (alice once, bob once)", n)
	}
	if allocs := testing.AllocsPerRun(100, func() { v.Verify(context.Background(), alice) }); allocs != 0 {
		t.Errorf("a cache hit allocates %v times", allocs)
	}

	// Without the cache every request is checked.
	v.Cache = nil
	expect(t, v, "alice without the cache", alice, Verified)
	if n := signatureChecks(v); n != 3 {
		t.Fatalf("%d signature checks, want 3", n)
	}
}

// The cache changes what a session costs, never whether it is accepted: a cached session
// expires, and becomes valid, at the very instant a fresh verification would decide so.
func TestACachedSessionEndsAtTheSameInstantAsAFreshlyVerifiedOne(t *testing.T) {
	start := time.Unix(1_900_000_000, 0)
	clock := shoptest.NewClock()
	k := shoptest.NewKey(t, "k1", jose.EdDSA)
	fresh := staticVerifier(t, start, k) // leeway 30s
	fresh.Now = clock.Now
	v := cached(staticVerifier(t, start, k), 100)
	v.Now = clock.Now
	const leeway = 30 * time.Second

	nbf, exp := start.Add(time.Minute), start.Add(2*time.Minute)
	tok := shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience}, Subject: "alice",
		NotBefore: jwt.NewNumericDate(nbf), IssuedAt: jwt.NewNumericDate(start), Expiry: jwt.NewNumericDate(exp)}})
	set := clock.Set

	set(nbf)
	expect(t, v, "at nbf", tok, Verified)
	checks := signatureChecks(v)
	for _, c := range []struct {
		name string
		at   time.Time
		want Outcome
		hit  bool // answered from the cache
	}{
		{"nbf - leeway", nbf.Add(-leeway), Verified, true},
		{"nbf - leeway - 1ns", nbf.Add(-leeway - 1), NotYetValid, false},
		{"exp", exp, Verified, true},
		{"exp + leeway - 1ns", exp.Add(leeway - 1), Verified, true},
		{"exp + leeway", exp.Add(leeway), Verified, true},
		{"exp + leeway + 1ns", exp.Add(leeway + 1), Expired, false},
		{"exp + leeway + 1ns, again", exp.Add(leeway + 1), Expired, false},
	} {
		set(c.at)
		expect(t, fresh, c.name+", fresh", tok, c.want)
		expect(t, v, c.name+", cached", tok, c.want)
		hit := signatureChecks(v) == checks
		if hit != c.hit {
			t.Errorf("%s: answered from the cache: %v, want %v", c.name, hit, c.hit)
		}
		checks = signatureChecks(v)
	}
	if n := v.Cache.Len(); n != 0 {
		t.Errorf("%d entries after the session expired for good, want 0", n)
	}
}

// Rotation and revocation: a key dropped from the JWKS ends its sessions at the refresh that
// sees it, cached or not; a key replaced under the same kid too. A refresh that changes nothing
// keeps the cache.
func TestAKeyDroppedOrReplacedInTheJWKSEndsItsCachedSessionsAtTheRefresh(t *testing.T) {
	shop := shoptest.NewShop(t)
	k1 := shop.Publish(shoptest.NewKey(t, "k1", jose.ES256))
	k2 := shop.Publish(shoptest.NewKey(t, "k2", jose.ES256))
	clock := shoptest.NewClock()
	v, j := jwksVerifier(t, shop, time.Hour, 15*time.Second, clock)
	cached(v, 100)
	refresh := func() {
		t.Helper()
		clock.Advance(time.Minute)
		before := shop.Hits.Load()
		if !j.fetchEarly(context.Background()) || shop.Hits.Load() != before+1 {
			t.Fatal("no refresh")
		}
	}
	one, two := shoptest.Session(t, k1, "alice"), shoptest.Session(t, k2, "alice")
	expect(t, v, "k1", one, Verified)
	expect(t, v, "k2", two, Verified)
	checks := signatureChecks(v)

	refresh() // the same document
	expect(t, v, "k1 after a refresh that changed nothing", one, Verified)
	expect(t, v, "k2 after a refresh that changed nothing", two, Verified)
	if signatureChecks(v) != checks {
		t.Fatal("a refresh that changed no key emptied the cache")
	}

	shop.Unpublish("k1")
	expect(t, v, "k1 dropped, not refreshed yet", one, Verified)
	refresh()
	expect(t, v, "k1 dropped and refreshed", one, UnknownKey)
	expect(t, v, "k1 dropped, again", one, UnknownKey)
	expect(t, v, "k2 still published", two, Verified)
	if signatureChecks(v) != checks {
		t.Fatal("dropping k1 ended k2's cached sessions")
	}

	// Another key published under k2: k2's sessions no longer verify.
	shop.Publish(shoptest.NewKey(t, "k2", jose.ES256))
	refresh()
	expect(t, v, "k2 replaced", two, BadSignature)
}

// The cache never holds more than its bound, however many distinct sessions arrive, and the
// most recent ones are those kept.
func TestTheCacheHoldsAtMostItsBoundOfSessions(t *testing.T) {
	for _, max := range []int{1, 63, 64, 127, 1000, 4096, DefaultVerifiedCache, DefaultVerifiedCache + 7} {
		c, total := NewVerifiedCache(max), 0
		for i := range c.shards {
			total += c.shards[i].max
		}
		if total != max {
			t.Errorf("verified_cache %d: the shards hold %d", max, total)
		}
	}
	if NewVerifiedCache(0) != nil {
		t.Error("verified_cache 0 must turn the cache off")
	}

	now := time.Now()
	k := shoptest.NewKey(t, "k1", jose.HS256)
	v := cached(staticVerifier(t, now, k), 1000)
	var last string
	for i := range 3000 {
		last = shoptest.Sign(t, k, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{shoptest.Audience},
			Subject: fmt.Sprintf("u%d", i), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}})
		if _, o := v.Verify(context.Background(), last); o != Verified {
			t.Fatal(o)
		}
	}
	if n := v.Cache.Len(); n != 1000 {
		t.Fatalf("%d sessions cached, want the bound, 1000", n)
	}
	checks := signatureChecks(v)
	if user, _ := v.Verify(context.Background(), last); user != "u2999" || signatureChecks(v) != checks {
		t.Fatalf("the most recent session was not kept (user %q)", user)
	}
	for i := range v.Cache.shards {
		s := &v.Cache.shards[i]
		s.mu.Lock()
		for key := range s.entries {
			if strings.Contains(string(key[:]), "eyJ") {
				t.Fatal("a cache key holds the token itself")
			}
		}
		s.mu.Unlock()
	}
}

// Only a success takes a place: forged, garbage, expired or foreign tokens are never cached, so
// a flood of them cannot evict a buyer's session, even from a cache of one.
func TestAFloodOfRefusedTokensNeverEvictsAVerifiedSession(t *testing.T) {
	now := time.Now()
	shopKey, forger := shoptest.NewKey(t, "k1", jose.ES256), shoptest.NewKey(t, "k1", jose.ES256)
	v := cached(staticVerifier(t, now, shopKey), 1)
	alice := shoptest.At(t, shopKey, now, now.Add(time.Hour))
	expect(t, v, "alice", alice, Verified)

	flood := map[string]Outcome{
		"garbage":     Malformed,
		"a.b.c":       Malformed,
		"expired":     Expired,
		"unknown kid": UnknownKey,
		"foreign aud": WrongAudience,
	}
	for i := range 50 {
		flood[shoptest.At(t, forger, now, now.Add(time.Hour+time.Duration(i)*time.Second))] = BadSignature
	}
	tokens := map[string]string{
		"expired":     shoptest.At(t, shopKey, now.Add(-2*time.Hour), now.Add(-time.Hour)),
		"unknown kid": shoptest.At(t, shoptest.NewKey(t, "k9", jose.ES256), now, now.Add(time.Hour)),
		"foreign aud": shoptest.Sign(t, shopKey, shoptest.Claims{Claims: jwt.Claims{Issuer: shoptest.Issuer, Audience: jwt.Audience{"shop-api"},
			Subject: "alice", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}}),
	}
	for tok, want := range flood {
		if real, ok := tokens[tok]; ok {
			tok = real
		}
		for range 2 {
			if _, o := v.Verify(context.Background(), tok); o != want {
				t.Fatalf("%.20s: %s, want %s", tok, o, want)
			}
		}
	}
	checks := signatureChecks(v)
	expect(t, v, "alice after the flood", alice, Verified)
	if signatureChecks(v) != checks || v.Cache.Len() != 1 {
		t.Fatalf("the flood evicted alice's session (%d entries)", v.Cache.Len())
	}
}

// Many buyers at once, a cache smaller than their number (entries come and go) and the JWKS
// refreshed all along: every request gets its own user. Run with -race.
func TestTheCacheIsSafeUnderConcurrentBuyersAndRefreshes(t *testing.T) {
	shop := shoptest.NewShop(t)
	k := shop.Publish(shoptest.NewKey(t, "k1", jose.EdDSA))
	v, _ := jwksVerifier(t, shop, 5*time.Millisecond, time.Millisecond, nil)
	cached(v, 256)
	const buyers = 400
	tokens := make([]string, buyers)
	for i := range tokens {
		tokens[i] = shoptest.Session(t, k, fmt.Sprintf("u%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				n := (g*131 + i*i*7) % buyers
				if user, o := v.Verify(context.Background(), tokens[n]); o != Verified || user != fmt.Sprintf("u%d", n) {
					errs <- fmt.Sprintf("u%d: %s %q", n, o, user)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := v.Cache.Len(); n > 256 {
		t.Errorf("%d entries, bound 256", n)
	}
	if shop.Hits.Load() < 2 {
		t.Error("the JWKS was not refreshed during the test")
	}
}
