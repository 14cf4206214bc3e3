package identity

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/identity/internal/shoptest"
)

// sessionShop is a shop with opaque sessions: GET /session answers 204 with X-Shop-User when
// the cookie or bearer token is a live session, 401 (a login page) when not. It counts calls
// and new connections, and can be slowed down or broken.
type sessionShop struct {
	srv      *httptest.Server
	mu       sync.Mutex
	sessions map[string]string
	calls    atomic.Int64
	conns    atomic.Int64
	broken   atomic.Bool
	delay    atomic.Int64 // time.Duration per call
	sawAuth  atomic.Value // the last Authorization header seen
}

func newSessionShop(t *testing.T) *sessionShop {
	s := &sessionShop{sessions: map[string]string{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		time.Sleep(time.Duration(s.delay.Load()))
		if s.broken.Load() {
			http.Error(w, "<html>oops</html>", http.StatusInternalServerError)
			return
		}
		s.sawAuth.Store(r.Header.Get("Authorization"))
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if c, err := r.Cookie("session"); err == nil {
			tok = c.Value
		}
		s.mu.Lock()
		user, ok := s.sessions[tok]
		s.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("<html>please sign in</html>"))
			return
		}
		w.Header().Set("X-Shop-User", user)
		w.WriteHeader(http.StatusNoContent)
	}))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sessionShop) signIn(token, user string) {
	s.mu.Lock()
	s.sessions[token] = user
	s.mu.Unlock()
}

func (s *sessionShop) signOut(token string) {
	s.mu.Lock()
	delete(s.sessions, token)
	s.mu.Unlock()
}

// sessionHandler is a seckill_session handler on shop with a clock of the test's.
func sessionHandler(t *testing.T, shop *sessionShop, clock *shoptest.Clock, h Session) *Session {
	t.Helper()
	h.Upstream = shop.srv.URL + "/session"
	h.Cookie = "session"
	h.UserHeader = "X-Shop-User"
	h.now = clock.Now
	if err := h.setup(nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	return &h
}

// serveConcurrently serves n copies of a request at once.
func serveConcurrently(h *Session, n int, mk func() *http.Request) []served {
	out := make([]served, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = serve(h, mk())
		}()
	}
	wg.Wait()
	return out
}

// The point of seckill_session: a sale's flood of one buyer's requests costs the shop one
// session lookup per TTL, not one per request.
func TestConcurrentRequestsOfOneSessionMakeOneShopCallPerTTL(t *testing.T) {
	shop := newSessionShop(t)
	shop.signIn("s-alice", "alice")
	shop.delay.Store(int64(50 * time.Millisecond)) // long enough for every request to miss together
	clock := shoptest.NewClock()
	h := sessionHandler(t, shop, clock, Session{TTL: caddy30s})

	for round := int64(1); round <= 3; round++ {
		for _, s := range serveConcurrently(h, 100, func() *http.Request { return request(nil, "s-alice") }) {
			if s.status != http.StatusOK || s.user != "alice" {
				t.Fatalf("round %d: %d %s user %q", round, s.status, s.code, s.user)
			}
		}
		if n := shop.calls.Load(); n != round {
			t.Fatalf("round %d: %d calls to the shop, want %d", round, n, round)
		}
		clock.Advance(29 * time.Second)
		serve(h, request(nil, "s-alice"))
		if n := shop.calls.Load(); n != round {
			t.Fatalf("round %d: a call before the TTL passed (%d)", round, n)
		}
		clock.Advance(time.Second)
	}
}

func TestASignedOutAnswerIsCachedShorterAndIs401(t *testing.T) {
	shop := newSessionShop(t)
	clock := shoptest.NewClock()
	h := sessionHandler(t, shop, clock, Session{})

	for range 5 {
		refused(t, "unknown session", serve(h, request(nil, "s-bob")), http.StatusUnauthorized, "unauthenticated")
	}
	if n := shop.calls.Load(); n != 1 {
		t.Fatalf("%d calls for one signed-out session, want 1", n)
	}
	// Bob signs in: let in once the signed-out answer (5s) has expired, not after 30s.
	shop.signIn("s-bob", "bob")
	clock.Advance(5 * time.Second)
	if s := serve(h, request(nil, "s-bob")); s.status != http.StatusOK || s.user != "bob" {
		t.Fatalf("after signing in: %d %s", s.status, s.code)
	}

	// No credential at all: refused without asking.
	refused(t, "no session", serve(h, request(http.Header{"X-User-Id": {"alice"}})), http.StatusUnauthorized, "unauthenticated")
	refused(t, "two Authorization headers", serve(h, request(http.Header{"Authorization": {"Bearer a", "Bearer b"}})), http.StatusUnauthorized, "unauthenticated")
	if n := shop.calls.Load(); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
}

func TestTheSessionServiceFailingIs503AndNotRemembered(t *testing.T) {
	shop := newSessionShop(t)
	shop.signIn("s-alice", "alice")
	clock := shoptest.NewClock()
	h := sessionHandler(t, shop, clock, Session{Timeout: caddyDuration(200 * time.Millisecond)})

	shop.broken.Store(true)
	for range 2 {
		s := serve(h, request(nil, "s-alice"))
		refused(t, "session service 500", s, http.StatusServiceUnavailable, "unavailable")
		if s.header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	}
	if n := shop.calls.Load(); n != 2 {
		t.Fatalf("%d calls, want 2: a failure is not cached", n)
	}
	shop.broken.Store(false)
	if s := serve(h, request(nil, "s-alice")); s.user != "alice" {
		t.Fatalf("after recovery: %d %s", s.status, s.code)
	}

	// Too slow: the timeout.
	shop.delay.Store(int64(time.Second))
	refused(t, "session service slow", serve(h, request(nil, "s-other")), http.StatusServiceUnavailable, "unavailable")
	shop.delay.Store(0)

	// Gone.
	shop.srv.Close()
	refused(t, "session service down", serve(h, request(nil, "s-third")), http.StatusServiceUnavailable, "unavailable")
	// What was cached before still works.
	if s := serve(h, request(nil, "s-alice")); s.user != "alice" {
		t.Fatalf("cached session while the service is down: %d %s", s.status, s.code)
	}
}

func TestTheShopSeesTheClientsCredentialOverKeptAliveConnections(t *testing.T) {
	shop := newSessionShop(t)
	clock := shoptest.NewClock()
	h := sessionHandler(t, shop, clock, Session{})
	for i := range 20 {
		tok := "s-" + string(rune('a'+i))
		shop.signIn(tok, "user"+string(rune('a'+i)))
		if s := serve(h, request(http.Header{"Authorization": {"Bearer " + tok}})); s.status != http.StatusOK {
			t.Fatalf("bearer session: %d %s", s.status, s.code)
		}
		if got := shop.sawAuth.Load(); got != "Bearer "+tok {
			t.Fatalf("the shop saw Authorization %q", got)
		}
	}
	if n := shop.conns.Load(); n != 1 {
		t.Fatalf("20 sequential lookups opened %d connections, want 1 (keep-alive)", n)
	}
}

func TestTheCacheIsBoundedAndKeyedByAHash(t *testing.T) {
	shop := newSessionShop(t)
	clock := shoptest.NewClock()
	h := sessionHandler(t, shop, clock, Session{MaxEntries: 3})
	for i := range 10 {
		tok := "secret-session-" + string(rune('a'+i))
		shop.signIn(tok, "u"+string(rune('a'+i)))
		serve(h, request(nil, tok))
	}
	if n := h.cache.Len(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	// The least recently used went first: the last three are still cached.
	calls := shop.calls.Load()
	serve(h, request(nil, "secret-session-j"))
	if shop.calls.Load() != calls {
		t.Fatal("the most recent session was evicted")
	}
	serve(h, request(nil, "secret-session-a"))
	if shop.calls.Load() != calls+1 {
		t.Fatal("the oldest session was still cached")
	}
	for _, k := range h.cache.Keys() {
		if strings.Contains(string(k[:]), "secret-session") {
			t.Fatal("a cache key holds the session itself")
		}
	}
}

var caddy30s = caddyDuration(30 * time.Second)

// A config reload mid-sale keeps the answers: the new config asks the shop nothing the old one
// already knew.
func TestAReloadKeepsTheSessionCache(t *testing.T) {
	shop := newSessionShop(t)
	shop.signIn("s-alice", "alice")
	cfg := func(maxEntries int) *Session {
		h := &Session{Upstream: shop.srv.URL + "/session", Cookie: "session", UserHeader: "X-Shop-User", MaxEntries: maxEntries}
		if err := h.setup(h.pooledStore); err != nil {
			t.Fatal(err)
		}
		return h
	}
	old := cfg(0)
	if s := serve(old, request(nil, "s-alice")); s.user != "alice" {
		t.Fatalf("%d %s", s.status, s.code)
	}
	reloaded := cfg(10) // provisioned before the old config is cleaned up, as Caddy does
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if s := serve(reloaded, request(nil, "s-alice")); s.user != "alice" {
		t.Fatalf("after the reload: %d %s", s.status, s.code)
	}
	if n := shop.calls.Load(); n != 1 {
		t.Fatalf("%d calls to the shop, want 1: the reload lost the cache", n)
	}
	if reloaded.cache.Bound() != 10 {
		t.Fatalf("max_entries of the new config not applied: %d", reloaded.cache.Bound())
	}
	if err := reloaded.Cleanup(); err != nil {
		t.Fatal(err)
	}
	// Another cookie name is another store: its answers are keyed differently.
	other := &Session{Upstream: shop.srv.URL + "/session", Cookie: "sid", UserHeader: "X-Shop-User"}
	if err := other.setup(other.pooledStore); err != nil {
		t.Fatal(err)
	}
	defer other.Cleanup()
	if other.cache == reloaded.cache {
		t.Fatal("two cookie names share one cache")
	}
}

// seckill_session drops the client's claim too: X-User-ID in every spelling, and its own
// user_header (the shop's answer header, which a backend may read as the user as well).
func TestSeckillSessionDropsEverySpellingOfAClaimedUser(t *testing.T) {
	shop := newSessionShop(t)
	shop.signIn("s-mallory", "mallory")
	h := sessionHandler(t, shop, shoptest.NewClock(), Session{})
	for _, name := range append(claimedUserHeaders, "X-Shop-User", "x_shop_user") {
		r := request(nil, "s-mallory")
		r.Header[name] = []string{"victim"}
		var left []string
		err := h.ServeHTTP(httptest.NewRecorder(), r, caddyhttp.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) error {
			left = claimsLeft(r.Header, "X-Shop-User")
			return nil
		}))
		if err != nil || len(left) != 0 {
			t.Errorf("%s: %v, left %v", name, err, left)
		}
	}
}
