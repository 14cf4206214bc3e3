package identity

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/identity/core"
	"github.com/seckilledge/seckill/contract"
)

func init() {
	caddy.RegisterModule(Session{})
}

// Defaults of seckill_session.
const (
	DefaultSessionTTL       = 30 * time.Second
	DefaultSignedOutTTL     = 5 * time.Second
	DefaultMaxSessions      = 100_000
	DefaultSessionTimeout   = 2 * time.Second
	DefaultSessionIdleConns = 64
)

// Session is the `seckill_session` handler, for shops whose sessions are opaque (the gateway
// cannot check them itself): it asks the shop's session endpoint who a session is, like
// forward_auth, and remembers the answer.
//
// What it does better than forward_auth for a sale: the answer is cached per session for ttl
// (keyed by the SHA-256 of the credential, never the credential), concurrent requests of one
// session make one call, a signed-out answer is cached briefly too (a client retrying without a
// session costs nothing), and its HTTP client keeps connections alive. The user becomes
// {http.auth.user.id}. Signed out: 401 unauthenticated. The session service failing or slow:
// 503 unavailable (fail closed; such answers are not cached).
type Session struct {
	// The shop's session endpoint, a full URL (http://127.0.0.1:3000/session). It gets a GET
	// with the client's Cookie and Authorization headers and answers 2xx with the user id in
	// user_header when signed in, 3xx or 4xx when not. Required.
	Upstream string `json:"upstream,omitempty"`

	// The session cookie's name: with the Authorization header, the credential that keys the
	// cache. Without it, the whole Cookie header is the key (any cookie change is a new
	// lookup). Requests with neither a cookie nor Authorization are refused without a call.
	Cookie string `json:"cookie,omitempty"`

	// The response header holding the user id. Default X-User-ID. The value must match
	// ^[A-Za-z0-9_-]{1,64}$; a 2xx without one is treated as signed out (and logged).
	UserHeader string `json:"user_header,omitempty"`

	// How long a signed-in answer is reused. A session the shop ends stays usable here this
	// long. Default 30s.
	TTL caddy.Duration `json:"ttl,omitempty"`

	// How long a signed-out answer is reused: short, so a buyer who signs in is let in soon.
	// Default 5s.
	SignedOutTTL caddy.Duration `json:"signed_out_ttl,omitempty"`

	// The most sessions remembered; the least recently used is forgotten first. Default
	// 100000 (about 15 MB).
	MaxEntries int `json:"max_entries,omitempty"`

	// How long one call to the session endpoint may take. Default 2s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// Idle connections kept open to the session endpoint. Default 64. Connections and the
	// cache are shared by every config asking the same upstream with the same cookie and
	// user_header, and survive config reloads; this setting is the first such config's.
	MaxIdleConns int `json:"max_idle_conns,omitempty"`

	// Hand refusals to the server's `handle_errors` routes as caddyhttp errors instead of
	// writing the JSON refusal body. WWW-Authenticate and Retry-After are set either way.
	HandleErrors bool `json:"handle_errors,omitempty"`

	client    *http.Client
	transport *http.Transport
	poolKey   string // "" when the store is not pooled (tests)
	cache     *core.SessionCache
	calls     *singleflight.Group
	logger    *zap.Logger
	refuse    handler.Writer
	// next is the handler after this one in its route when the seckill app linked them
	// (handler.Next): a purchase's identity, throttle and decision run as one.
	next *handler.Next
	now  func() time.Time
}

// CaddyModule returns the Caddy module information.
func (Session) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Session]("http.handlers.seckill_session")
}

// Provision sets the defaults and builds the client and the cache. No network I/O.
func (h *Session) Provision(ctx caddy.Context) error {
	h.next = new(handler.Next)
	h.logger = edge.SampledLogger(ctx.Logger())
	registerMetrics(ctx.GetMetricsRegistry())
	return h.setup(h.pooledStore)
}

// sessionPool keeps each session endpoint's cache, single flight and connections across config
// reloads: a reload mid-sale must not send every active session back to the shop at once.
var sessionPool = caddy.NewUsagePool()

// sessionStore is what the configs asking one endpoint the same way share.
type sessionStore struct {
	cache     *core.SessionCache
	calls     *singleflight.Group
	transport *http.Transport
}

func newSessionStore(maxEntries, maxIdleConns int) *sessionStore {
	return &sessionStore{
		cache: core.NewSessionCache(maxEntries),
		calls: new(singleflight.Group),
		// Our own transport: keep-alive on, sized for one host, no proxy from the environment.
		transport: &http.Transport{
			MaxIdleConns:        maxIdleConns,
			MaxIdleConnsPerHost: maxIdleConns,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		},
	}
}

// Destruct closes the idle connections once no config uses the store.
func (s *sessionStore) Destruct() error {
	s.transport.CloseIdleConnections()
	return nil
}

// pooledStore joins the store of the endpoint, the cookie and the user header (what an answer
// and its cache key depend on), creating it for the first config. The newest config's
// max_entries applies; max_idle_conns is the first's.
func (h *Session) pooledStore() (*sessionStore, error) {
	key := h.Upstream + "\n" + h.Cookie + "\n" + h.UserHeader
	v, _, err := sessionPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		return newSessionStore(h.MaxEntries, h.MaxIdleConns), nil
	})
	if err != nil {
		return nil, err
	}
	h.poolKey = key
	s := v.(*sessionStore)
	s.cache.Resize(h.MaxEntries)
	return s, nil
}

// setup applies the defaults and takes the store (the pool's, or a private one without pool).
func (h *Session) setup(pool func() (*sessionStore, error)) error {
	if h.logger == nil {
		h.logger = zap.NewNop()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.Upstream = caddy.NewReplacer().ReplaceAll(h.Upstream, "")
	if h.UserHeader == "" {
		h.UserHeader = UserHeader
	}
	if h.TTL <= 0 {
		h.TTL = caddy.Duration(DefaultSessionTTL)
	}
	if h.SignedOutTTL <= 0 {
		h.SignedOutTTL = caddy.Duration(DefaultSignedOutTTL)
	}
	if h.MaxEntries <= 0 {
		h.MaxEntries = DefaultMaxSessions
	}
	if h.Timeout <= 0 {
		h.Timeout = caddy.Duration(DefaultSessionTimeout)
	}
	if h.MaxIdleConns <= 0 {
		h.MaxIdleConns = DefaultSessionIdleConns
	}
	h.refuse = handler.Writer{HandleErrors: h.HandleErrors}
	var store *sessionStore
	if pool == nil {
		store = newSessionStore(h.MaxEntries, h.MaxIdleConns)
	} else {
		var err error
		if store, err = pool(); err != nil {
			return fmt.Errorf("seckill_session: %w", err)
		}
	}
	h.cache, h.calls, h.transport = store.cache, store.calls, store.transport
	h.client = &http.Client{
		Transport: h.transport,
		Timeout:   time.Duration(h.Timeout),
		// A redirect (to a login page) is the shop's "signed out", not something to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return nil
}

// Validate checks the configuration.
func (h *Session) Validate() error {
	u, err := url.Parse(h.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("seckill_session: upstream %q: want the session endpoint's full http(s) URL", h.Upstream)
	}
	if h.SignedOutTTL > h.TTL {
		return fmt.Errorf("seckill_session: signed_out_ttl %v is longer than ttl %v", time.Duration(h.SignedOutTTL), time.Duration(h.TTL))
	}
	return nil
}

// Cleanup lets go of the pooled store (its connections are closed once no config uses it).
func (h *Session) Cleanup() error {
	if h.poolKey != "" {
		_, err := sessionPool.Delete(h.poolKey)
		return err
	}
	if h.transport != nil {
		h.transport.CloseIdleConnections()
	}
	return nil
}

// The refusals of seckill_session.
var (
	refusedSignedOut = handler.Refusal{Status: http.StatusUnauthorized, Code: contract.CodeUnauthenticated,
		Message: "sign in first"}
	refusedSessionDown = handler.Refusal{Status: http.StatusServiceUnavailable, Code: contract.CodeUnavailable,
		Message: "the session service is not answering; retry shortly", RetryAfter: time.Second}
)

// ServeHTTP finds the request's user, then calls next as that user or refuses.
func (h *Session) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	t := h.next.Target(r)
	if t == handler.Elsewhere {
		// In a dispatched route, a path none of its handlers answers (handler.Dispatch).
		return next.ServeHTTP(w, r)
	}
	key, outcome := h.credentialKey(r)
	if outcome == "" {
		user, err := h.lookup(r, key)
		switch {
		case err != nil:
			outcome = sessionUnavailable
		case user == "":
			outcome = sessionSignedOut
		default:
			sessionRequests.WithLabelValues(sessionSignedIn).Inc()
			admit(r, user, h.UserHeader)
			return h.next.For(t, next).ServeHTTP(w, r)
		}
	}
	sessionRequests.WithLabelValues(outcome).Inc()
	switch outcome {
	case sessionUnavailable:
		return h.refuse.Write(w, refusedSessionDown)
	case sessionAmbiguous:
		w.Header().Set("WWW-Authenticate", challenge(core.Ambiguous))
		return h.refuse.Write(w, refusedAmbiguous)
	}
	if outcome == sessionMissing {
		w.Header().Set("WWW-Authenticate", challenge(core.Missing))
	} else {
		// A credential was presented and the shop does not know it.
		w.Header().Set("WWW-Authenticate", challenge(core.Expired))
	}
	return h.refuse.Write(w, refusedSignedOut)
}

// credentialKey hashes what identifies the request's session: its Authorization header and
// its session cookie (the whole Cookie header without a cookie name). outcome is "" when there
// is something to look up.
func (h *Session) credentialKey(r *http.Request) (core.SessionKey, string) {
	auth := r.Header["Authorization"]
	if len(auth) > 1 {
		return core.SessionKey{}, sessionAmbiguous
	}
	var cookie string
	if h.Cookie == "" {
		cookie = strings.Join(r.Header["Cookie"], "; ")
	} else {
		cs := r.CookiesNamed(h.Cookie)
		if len(cs) > 1 {
			return core.SessionKey{}, sessionAmbiguous
		}
		if len(cs) == 1 {
			cookie = cs[0].Value
		}
	}
	if len(auth) == 0 && cookie == "" {
		return core.SessionKey{}, sessionMissing
	}
	hash := sha256.New()
	if len(auth) == 1 {
		io.WriteString(hash, auth[0])
	}
	// A separator no header value can hold, so (auth, cookie) pairs never collide.
	hash.Write([]byte{0})
	io.WriteString(hash, cookie)
	var k core.SessionKey
	hash.Sum(k[:0])
	return k, ""
}

// lookup returns the session's user ("" when signed out), from the cache or from one call to
// the session endpoint shared by every request of that session that misses meanwhile.
func (h *Session) lookup(r *http.Request, k core.SessionKey) (string, error) {
	if a, ok := h.cache.Get(k, h.now()); ok {
		sessionCacheResults.WithLabelValues("hit").Inc()
		return a.User, nil
	}
	sessionCacheResults.WithLabelValues("miss").Inc()
	// The headers of the first request go to the shop; the others of the same key carry the
	// same credential by construction.
	cookie, auth := slices.Clone(r.Header.Values("Cookie")), slices.Clone(r.Header.Values("Authorization"))
	ch := h.calls.DoChan(string(k[:]), func() (any, error) {
		// Not the request's context: the call serves every waiter, and its answer the cache.
		ctx := context.WithoutCancel(r.Context())
		user, err := h.ask(ctx, cookie, auth)
		if err != nil {
			sessionLookups.WithLabelValues(lookupError).Inc()
			return "", err
		}
		ttl := h.TTL
		if user == "" {
			ttl = h.SignedOutTTL
			sessionLookups.WithLabelValues(lookupSignedOut).Inc()
		} else {
			sessionLookups.WithLabelValues(lookupSignedIn).Inc()
		}
		h.cache.Put(k, core.Answer{User: user, Expires: h.now().Add(time.Duration(ttl))})
		return user, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	case <-r.Context().Done():
		return "", r.Context().Err()
	}
}

// errSessionService is a failure of the session endpoint (5xx, or a transport error).
var errSessionService = errors.New("session service failed")

// ask calls the session endpoint once.
func (h *Session) ask(ctx context.Context, cookie, auth []string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Upstream, nil)
	if err != nil {
		return "", err
	}
	if len(cookie) > 0 {
		req.Header["Cookie"] = cookie
	}
	if len(auth) > 0 {
		req.Header["Authorization"] = auth
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.logger.Warn("session endpoint unreachable; answering unavailable", zap.Error(err))
		return "", err
	}
	// Drain a little so the connection goes back to the pool; a login page is not read whole.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		h.logger.Warn("session endpoint failed; answering unavailable", zap.Int("status", resp.StatusCode))
		return "", fmt.Errorf("%w: %s", errSessionService, resp.Status)
	case resp.StatusCode >= 300:
		return "", nil
	case resp.StatusCode < 200:
		return "", fmt.Errorf("%w: %s", errSessionService, resp.Status)
	}
	user := resp.Header.Get(h.UserHeader)
	if !contract.ValidID(user) {
		h.logger.Warn("the session endpoint said signed in without a valid user id; treated as signed out",
			zap.String("header", h.UserHeader), zap.Int("length", len(user)))
		return "", nil
	}
	return user, nil
}

// LinkNext makes next, the rest of the handler's route, where a request it admits goes
// (caddymodule.App links a purchase's handlers at start).
func (h *Session) LinkNext(next caddyhttp.Handler) {
	if h.next != nil {
		h.next.Link(next)
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Session)(nil)
	_ caddy.Validator             = (*Session)(nil)
	_ caddy.CleanerUpper          = (*Session)(nil)
	_ caddyhttp.MiddlewareHandler = (*Session)(nil)
)

// LinkFloor makes d the dispatch of the handler's route (handler.Dispatch): it then asks about
// only the requests some handler of the route answers.
func (h *Session) LinkFloor(d *handler.Dispatch) {
	if h.next != nil {
		h.next.LinkFloor(d)
	}
}
