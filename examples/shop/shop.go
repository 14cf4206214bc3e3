package shop

import (
	"context"
	"crypto/ecdsa"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// Shop is the sample shop's HTTP side. New makes one; Handler serves it.
type Shop struct {
	cfg      Config
	sessions *Sessions
	inbox    *Inbox
	payments *Payments
	log      *slog.Logger
	secure   bool // the public URL is https: the cookie is Secure and __Host- (SecureCookieName)
	// now is the clock (tests move it).
	now func() time.Time
}

// New makes a shop from cfg, signing sessions with key.
func New(cfg Config, key *ecdsa.PrivateKey, log *slog.Logger) (*Shop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sessions, err := NewSessions(key, cfg.PublicURL, cfg.SessionTTL)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Shop{
		cfg:      cfg,
		sessions: sessions,
		inbox:    NewInbox(cfg.WebhookSecret, cfg.Events),
		payments: &Payments{AdminURL: cfg.BackendAdmin, Token: cfg.ShopToken, Client: &http.Client{Timeout: 10 * time.Second}},
		log:      log,
		secure:   strings.HasPrefix(cfg.PublicURL, "https://"),
		now:      time.Now,
	}, nil
}

// Sessions returns the shop's session signer (tests sign with it).
func (s *Shop) Sessions() *Sessions { return s.sessions }

// Inbox returns the shop's webhook receiver.
func (s *Shop) Inbox() *Inbox { return s.inbox }

// Handler serves the shop's routes.
func (s *Shop) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("POST /signin", sameOrigin(s.signIn))
	mux.HandleFunc("POST /signout", sameOrigin(s.signOut))
	mux.HandleFunc("GET /.well-known/jwks.json", s.jwks)
	mux.HandleFunc("GET /session", s.session)
	mux.Handle("POST /webhooks", s.inbox)
	mux.HandleFunc("GET /webhooks", s.webhooks)
	mux.HandleFunc("POST /account/orders/{id}/pay", sameOrigin(s.pay))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	return mux
}

// sameOrigin refuses a form post that a browser says comes from another site. The session
// cookie is SameSite=Lax, so another site's post arrives without it already; this also stops a
// forged sign-in (login CSRF) and does not rely on the browser's cookie rules alone. The gateway
// passes the Host header through unchanged, so Origin and Host name the same site.
func sameOrigin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				writeError(w, http.StatusForbidden, "forbidden", "a form of another site")
				return
			}
		}
		next(w, r)
	}
}

// user is the signed-in user of r, or "".
func (s *Shop) user(r *http.Request) string {
	c, err := r.Cookie(s.cookieName())
	if err != nil {
		return ""
	}
	u, err := s.sessions.User(c.Value, s.now())
	if err != nil {
		return ""
	}
	return u
}

func (s *Shop) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	user := strings.TrimSpace(r.PostFormValue("user"))
	// DEMO ONLY: any well-formed name signs in, no password. A real shop checks credentials
	// here; everything after this line is what it would do as well.
	if !contract.ValidID(user) {
		s.render(w, r, http.StatusBadRequest, "", "A user name is 1 to 64 letters, digits, _ or -.")
		return
	}
	tok, err := s.sessions.Issue(user, s.now())
	if err != nil {
		s.render(w, r, http.StatusInternalServerError, "", "could not sign in")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: tok, Path: "/", MaxAge: int(s.cfg.SessionTTL / time.Second),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Shop) signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Shop) jwks(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, s.sessions.JWKS())
}

// session is the session endpoint of deploy/Caddyfile.production-session's seckill_session
// (its default SECKILL_SESSION_URL is this shop's /session): 204 with X-User-ID for a valid
// session (the cookie, or a bearer token), 401 without. A shop whose sessions are opaque
// answers the same way; this one can also be checked at the edge with its JWKS.
func (s *Shop) session(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	user := s.user(r)
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && user == "" {
		user, _ = s.sessions.User(tok, s.now())
	}
	if user == "" {
		writeError(w, http.StatusUnauthorized, "unauthenticated", "not signed in")
		return
	}
	w.Header().Set("X-User-ID", user)
	w.WriteHeader(http.StatusNoContent)
}

// cookieName is the session cookie's name: __Host- prefixed over https.
func (s *Shop) cookieName() string {
	if s.secure {
		return SecureCookieName
	}
	return CookieName
}

// CookieName is the session cookie this shop sets and reads (SecureCookieName over https).
func (s *Shop) CookieName() string { return s.cookieName() }

// webhooks lists the deliveries received. They name buyers and their orders and draw results,
// so the list needs the shop token as a bearer token (it was open to anyone who could
// reach the shop); without a shop token configured it is never served.
func (s *Shop) webhooks(w http.ResponseWriter, r *http.Request) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if s.cfg.ShopToken == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.ShopToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="seckill-shop"`)
		writeError(w, http.StatusUnauthorized, "unauthenticated", "the webhook list needs the shop token (Authorization: Bearer $SECKILL_SHOP_TOKEN)")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"secret_configured": s.cfg.WebhookSecret != "", "deliveries": s.inbox.Deliveries()})
}

// notices are the messages a redirect back to the page may name (?notice=): a fixed set, so a
// link cannot put words in the shop's mouth.
var notices = map[string]string{
	"paid":          "Payment confirmed: the backend marked the order paid.",
	"not_payable":   "The backend refused: the order is not payable (cancelled, failed, or its payment window closed).",
	"unknown_order": "No such order of yours is known yet: it becomes payable when the backend's order.created webhook arrives.",
	"unavailable":   "The backend did not answer; try again shortly.",
	"payments_off":  "Payments are not configured on this shop (SECKILL_SHOP_TOKEN).",
	"signin":        "Sign in first.",
}

// pay confirms the payment of one of the signed-in user's orders to the backend. A form post
// answers with a redirect to the page; Accept: application/json gets the JSON answer.
func (s *Shop) pay(w http.ResponseWriter, r *http.Request) {
	wantJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	answer := func(status int, notice string, o Order) {
		if wantJSON {
			if status == http.StatusOK {
				writeJSON(w, status, map[string]string{"order_id": o.ID, "status": o.Status})
				return
			}
			writeError(w, status, notice, notices[notice])
			return
		}
		http.Redirect(w, r, "/?notice="+url.QueryEscape(notice)+"#orders", http.StatusSeeOther)
	}
	user := s.user(r)
	if user == "" {
		answer(http.StatusUnauthorized, "signin", Order{})
		return
	}
	id := r.PathValue("id")
	// Only the owner pays, and only an order the backend told the shop about.
	o, ok := s.inbox.Order(id)
	if !ok || o.UserID != user {
		answer(http.StatusNotFound, contract.CodeUnknownOrder, Order{})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	err := s.payments.Confirm(ctx, id)
	switch {
	case err == nil:
		s.inbox.MarkPaid(id, s.now())
		o.Status = contract.StatusPaid
		s.log.Info("order paid", "order_id", id, "user", user)
		answer(http.StatusOK, "paid", o)
	case errors.Is(err, ErrNotPayable):
		answer(http.StatusConflict, contract.CodeNotPayable, o)
	case errors.Is(err, ErrUnknownOrder):
		answer(http.StatusNotFound, contract.CodeUnknownOrder, o)
	case errors.Is(err, ErrPaymentsOff):
		answer(http.StatusServiceUnavailable, "payments_off", o)
	default:
		s.log.Warn("payment confirmation failed", "order_id", id, "err", err)
		answer(http.StatusServiceUnavailable, contract.CodeUnavailable, o)
	}
}

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

type pageData struct {
	User   string
	Sales  []string
	Orders []Order
	Notice string
	// Prefix and OrdersPrefix are where the page calls the gateway.
	Prefix, OrdersPrefix string
}

func (s *Shop) page(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, s.user(r), notices[r.URL.Query().Get("notice")])
}

func (s *Shop) render(w http.ResponseWriter, r *http.Request, status int, user, notice string) {
	d := pageData{User: user, Sales: s.cfg.Sales, Notice: notice, Prefix: s.cfg.Prefix, OrdersPrefix: s.cfg.OrdersPrefix}
	if d.Prefix == "" {
		d.Prefix = "/seckill"
	}
	if d.OrdersPrefix == "" {
		d.OrdersPrefix = "/orders"
	}
	if user != "" {
		d.Orders = s.inbox.OrdersOf(user)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := pageTmpl.Execute(w, d); err != nil {
		s.log.Warn("page", "err", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"code": code, "message": message})
}
