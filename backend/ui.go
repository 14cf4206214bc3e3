package backend

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
)

// The live page (GET /admin/ui, docs/operator.md "The live page").
//
// Authentication: a browser cannot send a Bearer header on a plain navigation, so the page
// takes the admin token once, from its login form (POST /admin/ui/login; never from the URL,
// where it would stay in history, logs and Referer headers), and answers with a session: a
// cookie holding a random session id (ui_session.go), never the token. The cookie is HttpOnly
// (no script reads it), SameSite=Strict (no other site's page sends it), scoped to /admin/ui,
// Secure behind TLS, and ends after 12 h idle, at sign-out (POST /admin/ui/logout) or at a
// restart. The page's own calls go to /admin/ui/api/..., which run the very admin routes as
// the session's principal, with their role checks; a write there also needs the header
// X-Seckill-UI, which a cross-site form cannot set, and every POST of the page must come from
// the page's own origin (sameOrigin). Failed sign-ins are limited per client (ui_guard.go).
// Viewers see the page; only admins' buttons work.

//go:embed ui/*.html
var uiFiles embed.FS

const uiCookie = "seckill_ui"

// cockpitAuth is the page's sign-in state: its sessions and its failed-login limiter.
type cockpitAuth struct {
	sessions *sessions
	logins   *loginLimiter
}

// cockpit returns the service's sign-in state, made on first use (a Service is built as a
// struct literal, in tests too).
func (s *Service) cockpit() *cockpitAuth {
	s.cockpitOnce.Do(func() { s.cockpitState = &cockpitAuth{sessions: newSessions(), logins: newLoginLimiter()} })
	return s.cockpitState
}

// mountUI adds the live page, its login, its event stream and its API bridge.
func (s *Service) mountUI(mux *http.ServeMux, reg *prometheus.Registry) {
	src := cockpitSourcesFromEnv(reg)
	mux.HandleFunc("GET /admin/ui", s.handleUI)
	mux.HandleFunc("POST /admin/ui/login", s.handleUILogin)
	mux.HandleFunc("POST /admin/ui/logout", s.handleUILogout)
	mux.HandleFunc("GET /admin/ui/events", s.fromSession(s.viewer(func(w http.ResponseWriter, r *http.Request) {
		s.streamFrames(w, r, src)
	})))
	mux.Handle("/admin/ui/api/", s.fromSession(func(w http.ResponseWriter, r *http.Request) {
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

// fromSession lets the page's session stand for the Bearer header: the admin routes behind it
// (allow) take the session's principal. A request with a Bearer header is the API's, and its
// cookie is ignored.
func (s *Service) fromSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(uiCookie); err == nil && bearer(r) == "" {
			if who, ok := s.cockpit().sessions.get(c.Value, s.now()); ok {
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, pageSession{id: c.Value, who: who}))
			}
		}
		next(w, r)
	}
}

// sessionFrom returns the page session fromSession found for the request.
func sessionFrom(ctx context.Context) (pageSession, bool) {
	ps, ok := ctx.Value(sessionKey{}).(pageSession)
	return ps, ok
}

// cookie is the page's session cookie; maxAge -1 deletes it.
func (s *Service) cookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: uiCookie, Value: id, Path: "/admin/ui", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// pageRole is the role of a token that may see the page (admin or viewer).
func (s *Service) pageRole(token string) (httpapi.Principal, bool) {
	who, ok := s.tokens().Lookup(token)
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

func (s *Service) handleUI(w http.ResponseWriter, r *http.Request) {
	// No token is taken from the URL (?token=): it would stay in the browser's history, in
	// access logs and in Referer headers. The login form is the one way in.
	c, err := r.Cookie(uiCookie)
	if err != nil {
		s.loginPage(w, http.StatusUnauthorized, "")
		return
	}
	who, ok := s.cockpit().sessions.get(c.Value, s.now())
	if !ok {
		http.SetCookie(w, s.cookie(r, "", -1))
		s.loginPage(w, http.StatusUnauthorized, "your session has ended: sign in again")
		return
	}
	// Each visit renews the cookie as far as the session's idle limit.
	http.SetCookie(w, s.cookie(r, c.Value, int(sessionIdle/time.Second)))
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	nonce := base64.RawStdEncoding.EncodeToString(raw[:])
	page, _ := uiFiles.ReadFile("ui/cockpit.html")
	pageHeaders(w, nonce)
	page = []byte(replaceAll(string(page), map[string]string{"{{WHO}}": htmlEscape(who.Name), "{{ROLE}}": string(who.Role),
		"<script>": `<script nonce="` + nonce + `">`}))
	_, _ = w.Write(page)
}

func (s *Service) handleUILogin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httpapi.Refuse(w, http.StatusForbidden, codeCrossSite, "sign-in from another site's page")
		return
	}
	auth, now, client := s.cockpit(), s.now(), loginClient(r)
	if retry, first, limited := auth.logins.limited(client, now); limited {
		if first {
			s.Log.Warn("cockpit sign-in rate limited", "client", client, "failures", loginFailures, "window", loginWindow.String())
		}
		secs := int((retry + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		httpapi.WriteJSON(w, http.StatusTooManyRequests, contract.Refusal{Code: contract.CodeRateLimited,
			Message: fmt.Sprintf("too many failed sign-ins from this address; retry in %d s", max(secs, 1))})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	who, ok := s.pageRole(r.PostFormValue("token"))
	if !ok {
		n := auth.logins.fail(client, now)
		// Logged for the operator's eyes (who is guessing?), never with the submitted value:
		// a mistyped token is most of a real one.
		s.Log.Warn("cockpit sign-in refused", "client", client, "failures_in_window", n)
		s.loginPage(w, http.StatusUnauthorized, "unknown token, or a role that may not see the page")
		return
	}
	auth.logins.succeed(client)
	// A new sign-in replaces the browser's old session rather than leaving it alive beside it.
	if c, err := r.Cookie(uiCookie); err == nil {
		auth.sessions.revoke(c.Value)
	}
	id := auth.sessions.open(who, now)
	s.Log.Info("cockpit sign-in", "who", who.Name, "role", string(who.Role), "client", client)
	http.SetCookie(w, s.cookie(r, id, int(sessionIdle/time.Second)))
	http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
}

// handleUILogout ends the session (the id is void at once, not only the cookie deleted).
func (s *Service) handleUILogout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httpapi.Refuse(w, http.StatusForbidden, codeCrossSite, "sign-out from another site's page")
		return
	}
	if c, err := r.Cookie(uiCookie); err == nil {
		s.cockpit().sessions.revoke(c.Value)
	}
	http.SetCookie(w, s.cookie(r, "", -1))
	http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
}

func (s *Service) loginPage(w http.ResponseWriter, status int, msg string) {
	page, _ := uiFiles.ReadFile("ui/login.html")
	pageHeaders(w, "")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(replaceAll(string(page), map[string]string{"{{MSG}}": htmlEscape(msg)})))
}

// streamFrames sends one CockpitFrame per second as Server-Sent Events until the page goes.
func (s *Service) streamFrames(w http.ResponseWriter, r *http.Request, src *cockpitSources) {
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
	f := &feed{s: s, src: src}
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
			s.Log.Warn("cockpit frame failed", "err", err)
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
			if _, alive := s.cockpit().sessions.get(ps.id, s.now()); !alive {
				return
			}
		}
	}
}
