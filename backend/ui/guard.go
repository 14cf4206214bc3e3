package ui

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The cockpit's defences around sign-in: same-origin checks on its POSTs and
// a limit on failed sign-ins per client.

// codeCrossSite refuses a browser request that another site's page made.
const codeCrossSite = "cross_site"

// sameOrigin reports whether a state-changing request of the page (sign-in, sign-out, a
// control) may come from where it comes from. A browser says where a request comes from:
// Sec-Fetch-Site (set by the browser, no page can forge it) must be same-origin; a browser
// without it sends Origin on every POST, which must be this very host. A request with neither
// is not a browser's (curl, a script with the token in hand): there is no cross-site page to
// fear, so it passes.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

const (
	// loginFailures failed sign-ins from one client within loginWindow, and the next attempt
	// is refused (429) until the window ends: 5 a minute makes guessing a 32-byte token hopeless
	// and still forgives a few typos.
	loginFailures = 5
	loginWindow   = time.Minute
	// maxLoginClients bounds the limiter's memory. When it is full of live windows (many
	// addresses failing at once), new clients share one window: under such a spray sign-in
	// fails closed for newcomers rather than giving each address a fresh allowance.
	maxLoginClients = 4096
)

type loginWindowState struct {
	start    time.Time
	failures int
	logged   bool // the limit was logged for this window
}

// loginLimiter counts failed sign-ins per client in fixed windows.
type loginLimiter struct {
	mu sync.Mutex
	m  map[string]*loginWindowState
}

func newLoginLimiter() *loginLimiter { return &loginLimiter{m: map[string]*loginWindowState{}} }

// loginClient is the key of a request's client: its address on the connection. The admin
// listener is private and not behind the gateway, so X-Forwarded-For is not trusted: a client
// would write a fresh value into it for every guess. IPv6 clients count per /64, the block one
// host usually holds.
func loginClient(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// limited reports whether client may not try now, and for how long.
func (l *loginLimiter) limited(client string, now time.Time) (retry time.Duration, first bool, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[l.keyLocked(client, now)]
	if w == nil || now.Sub(w.start) >= loginWindow || w.failures < loginFailures {
		return 0, false, false
	}
	first = !w.logged
	w.logged = true
	return w.start.Add(loginWindow).Sub(now), first, true
}

// fail counts a failed sign-in of client and returns the failures in its window.
func (l *loginLimiter) fail(client string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keyLocked(client, now)
	w := l.m[k]
	if w == nil || now.Sub(w.start) >= loginWindow {
		w = &loginWindowState{start: now}
		l.m[k] = w
	}
	w.failures++
	return w.failures
}

// succeed forgets client's failures: the operator who mistyped twice starts afresh.
func (l *loginLimiter) succeed(client string) {
	l.mu.Lock()
	delete(l.m, client)
	l.mu.Unlock()
}

// keyLocked is client, or the shared overflow key when the map is full of live windows.
func (l *loginLimiter) keyLocked(client string, now time.Time) string {
	if _, ok := l.m[client]; ok || len(l.m) < maxLoginClients {
		return client
	}
	for k, w := range l.m {
		if now.Sub(w.start) >= loginWindow {
			delete(l.m, k)
		}
	}
	if len(l.m) < maxLoginClients {
		return client
	}
	return "overflow"
}
