// Package ui is the live page, the cockpit (GET /admin/ui, docs/operator.md "The live page"):
// its sign-in and sessions, its event stream of one frame a second, and the bridge that runs
// the admin API for the page's buttons. It reads sales, tokens and the audit trail only
// through the functions a Cockpit is given, and the gateways' and RabbitMQ's figures from
// their HTTP endpoints; it imports no other backend package but the shared HTTP vocabulary.
package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/contract/report"
)

// The live page (GET /admin/ui, docs/operator.md "The live page").
//
// Authentication: a browser cannot send a Bearer header on a plain navigation, so the page
// takes the admin token once, from its login form (POST /admin/ui/login; never from the URL,
// where it would stay in history, logs and Referer headers), and answers with a session: a
// cookie holding a random session id (session.go), never the token. The cookie is HttpOnly
// (no script reads it), SameSite=Strict (no other site's page sends it), scoped to /admin/ui,
// Secure behind TLS, and ends after 12 h idle, at sign-out (POST /admin/ui/logout) or at a
// restart. The page's own calls go to /admin/ui/api/..., which run the very admin routes as
// the session's principal, with their role checks; a write there also needs the header
// X-Seckill-UI, which a cross-site form cannot set, and every POST of the page must come from
// the page's own origin (sameOrigin). Failed sign-ins are limited per client (guard.go).
// Viewers see the page; only admins' buttons work.

//go:embed *.html
var uiFiles embed.FS

const uiCookie = "seckill_ui"

// CookieName is the page's session cookie.
const CookieName = uiCookie

// Cockpit is the live page: what it reads is given as the few functions it calls, so it knows
// nothing of how the backend keeps sales, tokens or the audit trail. Build it with New.
type Cockpit struct {
	Pool  *pgxpool.Pool
	Redis redis.UniversalClient
	Log   *slog.Logger
	// Now is the clock.
	Now func() time.Time
	// Lookup returns the principal of an admin token (false: no such token).
	Lookup func(token string) (httpapi.Principal, bool)
	// Viewer lets only admin and viewer principals through to next (the backend's role check,
	// which takes the session's principal, see SessionPrincipal).
	Viewer func(next http.HandlerFunc) http.HandlerFunc
	// Sales lists the sales that end after t, the newest first, at most limit.
	Sales func(ctx context.Context, t time.Time, limit int) ([]admin.SaleSummary, error)
	// Audit lists the newest entries of the audit trail, at most limit.
	Audit func(ctx context.Context, limit int) ([]admin.AuditEntry, error)
	// ReportKey is the public half of the key that signs the fairness reports, as
	// GET /.well-known/seckill-report-keys lists it (nil: the backend has none, and publishes
	// no report). The page shows it, so an operator can hand the key id and the key to whoever
	// checks a report.
	ReportKey func() *report.Key

	sessions *sessions
	logins   *loginLimiter
}

// New returns the cockpit c describes, with no session yet.
func New(c Cockpit) *Cockpit {
	c.sessions, c.logins = newSessions(), newLoginLimiter()
	return &c
}

// Session returns the principal of a live session id.
func (c *Cockpit) Session(id string) (httpapi.Principal, bool) { return c.sessions.get(id, c.Now()) }

// Sessions counts the live sessions.
func (c *Cockpit) Sessions() int { return c.sessions.len() }

// Mount adds the live page, its login, its event stream and its API bridge to mux, which
// serves the admin routes the bridge runs. reg is the backend's registry (the page's
// throughput and lag figures).
func (c *Cockpit) Mount(mux *http.ServeMux, reg *prometheus.Registry) {
	src := cockpitSourcesFromEnv(reg)
	mux.HandleFunc("GET /admin/ui", c.handleUI)
	mux.HandleFunc("POST /admin/ui/login", c.handleUILogin)
	mux.HandleFunc("POST /admin/ui/logout", c.handleUILogout)
	mux.HandleFunc("GET /admin/ui/events", c.FromSession(c.Viewer(func(w http.ResponseWriter, r *http.Request) {
		c.streamFrames(w, r, src)
	})))
	mux.Handle("/admin/ui/api/", c.FromSession(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Header.Get("X-Seckill-UI") == "" {
				httpapi.Refuse(w, http.StatusForbidden, httpapi.CodeForbidden, "page calls must carry X-Seckill-UI")
				return
			}
			if !sameOrigin(r) {
				httpapi.Refuse(w, http.StatusForbidden, codeCrossSite, "a control of the page from another site")
				return
			}
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/admin/" + r.URL.Path[len("/admin/ui/api/"):]
		r2.URL.RawPath = ""
		r2.RequestURI = r2.URL.RequestURI()
		mux.ServeHTTP(w, r2)
	}))
}

type sessionKey struct{}

// pageSession is the session a request of the page runs in.
type pageSession struct {
	id  string
	who httpapi.Principal
}

// FromSession lets the page's session stand for the Bearer header: the admin routes behind it
// take the session's principal (SessionPrincipal). A request with a Bearer header is the
// API's, and its cookie is ignored.
func (c *Cockpit) FromSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ck, err := r.Cookie(uiCookie); err == nil && httpapi.Bearer(r) == "" {
			if who, ok := c.sessions.get(ck.Value, c.Now()); ok {
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, pageSession{id: ck.Value, who: who}))
			}
		}
		next(w, r)
	}
}

// SessionPrincipal returns the principal of the page session FromSession found for the
// request: the backend's role check takes it in place of a Bearer token.
func SessionPrincipal(ctx context.Context) (httpapi.Principal, bool) {
	ps, ok := sessionFrom(ctx)
	return ps.who, ok
}

// sessionFrom returns the page session FromSession found for the request.
func sessionFrom(ctx context.Context) (pageSession, bool) {
	ps, ok := ctx.Value(sessionKey{}).(pageSession)
	return ps, ok
}

// cookie is the page's session cookie; maxAge -1 deletes it.
func (c *Cockpit) cookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: uiCookie, Value: id, Path: "/admin/ui", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// pageRole is the role of a token that may see the page (admin or viewer).
func (c *Cockpit) pageRole(token string) (httpapi.Principal, bool) {
	who, ok := c.Lookup(token)
	return who, ok && (who.Role == httpapi.RoleAdmin || who.Role == httpapi.RoleViewer)
}

// pageHeaders are the headers of every HTML answer of the page. The CSP lets the page run its
// one inline script (by nonce) and talk to its own origin only, and no other site frame it
// (clickjacking a pause button); style attributes stay allowed for the charts' keys.
func pageHeaders(w http.ResponseWriter, nonce string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	script := "'none'"
	if nonce != "" {
		script = "'nonce-" + nonce + "'"
	}
	h.Set("Content-Security-Policy", "default-src 'none'; script-src "+script+"; style-src 'unsafe-inline'; "+
		"connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

func (c *Cockpit) handleUI(w http.ResponseWriter, r *http.Request) {
	// No token is taken from the URL (?token=): it would stay in the browser's history, in
	// access logs and in Referer headers. The login form is the one way in.
	ck, err := r.Cookie(uiCookie)
	if err != nil {
		c.loginPage(w, http.StatusUnauthorized, "")
		return
	}
	who, ok := c.sessions.get(ck.Value, c.Now())
	if !ok {
		http.SetCookie(w, c.cookie(r, "", -1))
		c.loginPage(w, http.StatusUnauthorized, "your session has ended: sign in again")
		return
	}
	// Each visit renews the cookie as far as the session's idle limit.
	http.SetCookie(w, c.cookie(r, ck.Value, int(sessionIdle/time.Second)))
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	nonce := base64.RawStdEncoding.EncodeToString(raw[:])
	page, _ := uiFiles.ReadFile("cockpit.html")
	pageHeaders(w, nonce)
	page = []byte(replaceAll(string(page), map[string]string{"{{WHO}}": htmlEscape(who.Name), "{{ROLE}}": string(who.Role),
		"{{REPORT_KEY}}": c.reportKeyHTML(), "<script>": `<script nonce="` + nonce + `">`}))
	_, _ = w.Write(page)
}

// reportKeyHTML is the page's card of the report signing key: its id, its public key and
// where it is published, or why no report is published.
func (c *Cockpit) reportKeyHTML() string {
	var k *report.Key
	if c.ReportKey != nil {
		k = c.ReportKey()
	}
	if k == nil {
		return `<p class="dim" id="report-key-none">No signing key (<code>SECKILL_REPORT_KEY</code>): no fairness report is published.</p>`
	}
	demo := ""
	if k.Demo {
		demo = `<p class="warn" id="report-key-demo">The demo's key: its private half is public, so its reports prove nothing.</p>`
	}
	return `<table><tbody><tr><th>key id</th><td><code id="report-kid">` + htmlEscape(k.Kid) + `</code></td></tr>` +
		`<tr><th>algorithm</th><td>` + htmlEscape(k.Alg) + `</td></tr>` +
		`<tr><th>public key</th><td><code id="report-public-key">` + htmlEscape(k.PublicKey) + `</code></td></tr></tbody></table>` + demo +
		`<p class="dim">Published on the order listener at <code>/.well-known/seckill-report-keys</code>; a report is checked with <code>seckill-bench verify-report -url &lt;gateway&gt; -sale &lt;sale&gt;</code>.</p>`
}

func (c *Cockpit) handleUILogin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httpapi.Refuse(w, http.StatusForbidden, codeCrossSite, "sign-in from another site's page")
		return
	}
	now, client := c.Now(), loginClient(r)
	if retry, first, limited := c.logins.limited(client, now); limited {
		if first {
			c.Log.Warn("cockpit sign-in rate limited", "client", client, "failures", loginFailures, "window", loginWindow.String())
		}
		secs := int((retry + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		httpapi.WriteJSON(w, http.StatusTooManyRequests, contract.Refusal{Code: contract.CodeRateLimited,
			Message: fmt.Sprintf("too many failed sign-ins from this address; retry in %d s", max(secs, 1))})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	who, ok := c.pageRole(r.PostFormValue("token"))
	if !ok {
		n := c.logins.fail(client, now)
		// Logged for the operator's eyes (who is guessing?), never with the submitted value:
		// a mistyped token is most of a real one.
		c.Log.Warn("cockpit sign-in refused", "client", client, "failures_in_window", n)
		c.loginPage(w, http.StatusUnauthorized, "unknown token, or a role that may not see the page")
		return
	}
	c.logins.succeed(client)
	// A new sign-in replaces the browser's old session rather than leaving it alive beside it.
	if ck, err := r.Cookie(uiCookie); err == nil {
		c.sessions.revoke(ck.Value)
	}
	id := c.sessions.open(who, now)
	c.Log.Info("cockpit sign-in", "who", who.Name, "role", string(who.Role), "client", client)
	http.SetCookie(w, c.cookie(r, id, int(sessionIdle/time.Second)))
	http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
}

// handleUILogout ends the session (the id is void at once, not only the cookie deleted).
func (c *Cockpit) handleUILogout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httpapi.Refuse(w, http.StatusForbidden, codeCrossSite, "sign-out from another site's page")
		return
	}
	if ck, err := r.Cookie(uiCookie); err == nil {
		c.sessions.revoke(ck.Value)
	}
	http.SetCookie(w, c.cookie(r, "", -1))
	http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
}

func (c *Cockpit) loginPage(w http.ResponseWriter, status int, msg string) {
	page, _ := uiFiles.ReadFile("login.html")
	pageHeaders(w, "")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(replaceAll(string(page), map[string]string{"{{MSG}}": htmlEscape(msg)})))
}

// streamFrames sends one CockpitFrame per second as Server-Sent Events until the page goes.
func (c *Cockpit) streamFrames(w http.ResponseWriter, r *http.Request, src *cockpitSources) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpapi.Refuse(w, http.StatusInternalServerError, contract.CodeUnavailable, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	// A stream outlives any write timeout the listener has for ordinary answers.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	f := &feed{c: c, src: src}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(r.Context(), 900*time.Millisecond)
		fr, err := f.frame(ctx)
		cancel()
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			c.Log.Warn("cockpit frame failed", "err", err)
			_, _ = fmt.Fprintf(w, "event: trouble\ndata: %q\n\n", err.Error())
		} else {
			b, _ := json.Marshal(fr)
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		// A page's stream lasts as long as its session: sign-out or expiry ends it (the page's
		// reconnect then meets the login). An open page is in use, so its stream keeps the
		// session from going idle; the session's lifetime still ends it.
		if ps, ok := sessionFrom(r.Context()); ok {
			if _, alive := c.sessions.get(ps.id, c.Now()); !alive {
				return
			}
		}
	}
}
