package backend

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
)

// serverLimits are the timeouts and header bound of one listener.
type serverLimits struct {
	// ReadHeader bounds the request line and headers: a client that trickles them (slowloris)
	// is cut off.
	ReadHeader time.Duration
	// Read bounds the whole request, body included (0: see Body).
	Read time.Duration
	// Body, when Read is 0, bounds the reading of a request body only (bodyDeadline).
	Body time.Duration
	// Write bounds the handler and the response (0: none).
	Write time.Duration
	// Idle closes a keep-alive connection with no request for this long.
	Idle time.Duration
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
}

// orderLimits: the order API answers from one indexed query or a Redis pipeline, behind the
// gateway; nothing on it streams.
var orderLimits = serverLimits{ReadHeader: 5 * time.Second, Read: 15 * time.Second, Write: 30 * time.Second,
	Idle: 2 * time.Minute, MaxHeaderBytes: 32 << 10}

// adminLimits: the admin listener serves long requests (reconcile of a big sale) and may serve
// a streaming page (server-sent events), so it has no server-wide read or write deadline: with
// ReadTimeout set, net/http cancels a long handler's context when the deadline passes, and a
// WriteTimeout would cut a stream. Headers are bounded as on the order listener, a request body
// must arrive within Body (bodyDeadline), and a handler that must bound its writes sets its own
// deadline with http.ResponseController.
var adminLimits = serverLimits{ReadHeader: 5 * time.Second, Body: 30 * time.Second, Idle: 2 * time.Minute, MaxHeaderBytes: 32 << 10}

func newServer(h http.Handler, l serverLimits) *http.Server {
	if l.Read == 0 && l.Body > 0 {
		h = bodyDeadline(h, l.Body)
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeader, ReadTimeout: l.Read, WriteTimeout: l.Write,
		IdleTimeout: l.Idle, MaxHeaderBytes: l.MaxHeaderBytes}
}

// bodyDeadline gives a request with a body d to deliver it: the connection's read deadline is
// set when the handler starts and cleared once the body has been read to its end (so a handler
// that runs long afterwards keeps its context). A body left unread is drained by net/http under
// the same deadline.
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &clearAtEOF{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// clearAtEOF calls clear once, when the body returns io.EOF.
type clearAtEOF struct {
	io.ReadCloser
	clear func()
	done  bool
}

func (c *clearAtEOF) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if err == io.EOF && !c.done {
		c.done = true
		c.clear()
	}
	return n, err
}

// codeUnknownHost refuses a request whose Host is not one of the admin listener's names.
const codeUnknownHost = "unknown_host"

// AdminHostNames is the Host values the admin listener answers: setting
// (SECKILL_ADMIN_HOSTS, comma-separated "name:port", or "name" for any port) when given,
// else the configured listen host (unless it is a wildcard such as 0.0.0.0) and localhost,
// 127.0.0.1 and [::1], each with the port the listener is bound to (bound, so a ":0" of the
// tests is the real port).
func AdminHostNames(setting, listen, bound string) ([]string, error) {
	if strings.TrimSpace(setting) != "" {
		var names []string
		for _, n := range strings.Split(setting, ",") {
			n = strings.ToLower(strings.TrimSpace(n))
			if n == "" {
				continue
			}
			if strings.ContainsAny(n, "/ @?#") {
				return nil, fmt.Errorf("SECKILL_ADMIN_HOSTS: %q is no host name (want name or name:port)", n)
			}
			names = append(names, n)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("SECKILL_ADMIN_HOSTS names no host")
		}
		return names, nil
	}
	_, port, err := net.SplitHostPort(bound)
	if err != nil {
		return nil, fmt.Errorf("admin listener address %q: %w", bound, err)
	}
	names := []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.IsUnspecified() {
			names = append(names, strings.ToLower(net.JoinHostPort(host, port)))
		}
	}
	return names, nil
}

// hostGuard answers only requests whose Host is one of names, 421 unknown_host otherwise. A page
// of another site whose name an attacker points at this listener's address (DNS rebinding)
// would otherwise read /metrics and try sign-ins as if it were this origin; its requests carry
// the attacker's name in Host. A name without a port matches any port.
func hostGuard(names []string, next http.Handler) http.Handler {
	exact := map[string]bool{}
	for _, n := range names {
		exact[n] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := strings.ToLower(r.Host)
		name := h
		if host, _, err := net.SplitHostPort(h); err == nil {
			name = host
			if strings.Contains(host, ":") {
				name = "[" + host + "]"
			}
		}
		if !exact[h] && !exact[name] {
			httpapi.Refuse(w, http.StatusMisdirectedRequest, codeUnknownHost, "this listener does not answer for that host name (SECKILL_ADMIN_HOSTS)")
			return
		}
		next.ServeHTTP(w, r)
	})
}
