package backend

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckilledge/seckill/contract"
)

// The live page (GET /admin/ui, docs/operator.md "The live page").
//
// Authentication: a browser cannot send a Bearer header on a plain navigation, so the page
// takes the admin token once, from its login form (POST /admin/ui/login) or as ?token= on
// /admin/ui (then redirected to drop it from the address bar and history), and keeps it in a
// cookie that is HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
// it), scoped to /admin/ui, and Secure behind TLS. The page's own calls go to
// /admin/ui/api/..., which turns the cookie back into the Bearer header and runs the very
// admin routes, with their role checks; a write there also needs the header X-Seckill-UI,
// which a cross-site form cannot set. Viewers see the page; only admins' buttons work.

//go:embed ui/*.html
var uiFiles embed.FS

const uiCookie = "seckill_ui"

// mountUI adds the live page, its login, its event stream and its API bridge.
func (s *Service) mountUI(mux *http.ServeMux, reg *prometheus.Registry) {
	src := cockpitSourcesFromEnv(reg)
	mux.HandleFunc("GET /admin/ui", s.handleUI)
	mux.HandleFunc("POST /admin/ui/login", s.handleUILogin)
	mux.HandleFunc("POST /admin/ui/logout", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, s.cookie(r, "", -1))
		http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /admin/ui/events", s.fromCookie(s.viewer(func(w http.ResponseWriter, r *http.Request) {
		s.streamFrames(w, r, src)
	})))
	mux.Handle("/admin/ui/api/", s.fromCookie(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Header.Get("X-Seckill-UI") == "" {
			refuse(w, http.StatusForbidden, codeForbidden, "page calls must carry X-Seckill-UI")
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/admin/" + r.URL.Path[len("/admin/ui/api/"):]
		r2.URL.RawPath = ""
		r2.RequestURI = r2.URL.RequestURI()
		mux.ServeHTTP(w, r2)
	}))
}

// fromCookie lets the page's cookie stand for the Bearer header.
func (s *Service) fromCookie(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(uiCookie); err == nil && bearer(r) == "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+c.Value)
		}
		next(w, r)
	}
}

func (s *Service) cookie(r *http.Request, token string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: uiCookie, Value: token, Path: "/admin/ui", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// pageRole is the role of a token that may see the page (admin or viewer).
func (s *Service) pageRole(token string) (Principal, bool) {
	who, ok := s.tokens().Lookup(token)
	return who, ok && (who.Role == RoleAdmin || who.Role == RoleViewer)
}

func (s *Service) handleUI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	if tok := r.URL.Query().Get("token"); tok != "" {
		if _, ok := s.pageRole(tok); !ok {
			s.loginPage(w, http.StatusUnauthorized, "unknown token")
			return
		}
		http.SetCookie(w, s.cookie(r, tok, 12*3600))
		http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(uiCookie)
	if err != nil {
		s.loginPage(w, http.StatusUnauthorized, "")
		return
	}
	who, ok := s.pageRole(c.Value)
	if !ok {
		s.loginPage(w, http.StatusUnauthorized, "the saved token is no longer valid")
		return
	}
	page, _ := uiFiles.ReadFile("ui/cockpit.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	who.Name = htmlEscape(who.Name)
	page = []byte(replaceAll(string(page), map[string]string{"{{WHO}}": who.Name, "{{ROLE}}": string(who.Role)}))
	_, _ = w.Write(page)
}

func (s *Service) handleUILogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	tok := r.PostFormValue("token")
	if _, ok := s.pageRole(tok); !ok {
		s.loginPage(w, http.StatusUnauthorized, "unknown token, or a role that may not see the page")
		return
	}
	http.SetCookie(w, s.cookie(r, tok, 12*3600))
	http.Redirect(w, r, "/admin/ui", http.StatusSeeOther)
}

func (s *Service) loginPage(w http.ResponseWriter, status int, msg string) {
	page, _ := uiFiles.ReadFile("ui/login.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(replaceAll(string(page), map[string]string{"{{MSG}}": htmlEscape(msg)})))
}

// streamFrames sends one CockpitFrame per second as Server-Sent Events until the page goes.
func (s *Service) streamFrames(w http.ResponseWriter, r *http.Request, src *cockpitSources) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		refuse(w, http.StatusInternalServerError, contract.CodeUnavailable, "streaming unsupported")
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
	}
}
