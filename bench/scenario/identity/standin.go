package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/examples/shop"
	"github.com/seckilledge/seckill/internal/proc"
)

// The shop's side of the identity benchmark: one stand-in plays the shop for every identity
// case, so the cases differ only in what the gateway does. It signs sessions (ES256 JWTs, the
// key made at start, signed by examples/shop's Sessions: the one fake shop), publishes its public key as a JWKS, answers forward_auth's and
// seckill_session's lookups at /session from its own table of the sessions it signed (what a
// shop's session store does, in memory), and counts every lookup and every JWKS fetch. It runs
// as its own process (`seckill-bench session-standin`) so its CPU is measured apart from the
// gateway's.

// Stand-in defaults: what the benchmark's Caddyfile expects.
const (
	StandinIssuer   = "http://seckill-bench.standin"
	StandinAudience = shop.Audience
	StandinCookie   = "seckill_session"
)

// StandinCalls are the stand-in's counters: lookups of /session (signed in or not) and fetches
// of the JWKS since it started. /calls itself and /sessions are not counted.
type StandinCalls struct {
	Session int64 `json:"session"`
	JWKS    int64 `json:"jwks"`
	// Issued is how many sessions it has signed.
	Issued int64 `json:"issued"`
}

// Standin is the stand-in shop's HTTP side.
type Standin struct {
	key  *ecdsa.PrivateKey
	jwks []byte

	mu       sync.RWMutex
	signers  map[time.Duration]*shop.Sessions // by session lifetime (a Sessions has one)
	sessions map[string]string                // token -> user

	session, jwksHits atomic.Int64
}

// NewStandin makes a stand-in with a fresh ES256 key.
func NewStandin() (*Standin, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ss, err := shop.NewSessions(key, StandinIssuer, time.Hour)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(ss.JWKS())
	if err != nil {
		return nil, err
	}
	return &Standin{key: key, jwks: b, signers: map[time.Duration]*shop.Sessions{time.Hour: ss}, sessions: map[string]string{}}, nil
}

// Sign signs a session of user, valid for ttl, and remembers it for /session.
func (s *Standin) Sign(user string, ttl time.Duration) (string, error) {
	s.mu.Lock()
	ss := s.signers[ttl]
	s.mu.Unlock()
	if ss == nil {
		var err error
		if ss, err = shop.NewSessions(s.key, StandinIssuer, ttl); err != nil {
			return "", err
		}
	}
	tok, err := ss.Issue(user, time.Now())
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.signers[ttl] = ss
	s.sessions[tok] = user
	s.mu.Unlock()
	return tok, nil
}

// Calls reads the counters.
func (s *Standin) Calls() StandinCalls {
	s.mu.RLock()
	n := len(s.sessions)
	s.mu.RUnlock()
	return StandinCalls{Session: s.session.Load(), JWKS: s.jwksHits.Load(), Issued: int64(n)}
}

// ServeHTTP serves
//
//	GET  /.well-known/jwks.json              the public key (counted)
//	GET  /session                            200 + X-User-ID for a session it signed (cookie
//	                                         seckill_session or Authorization: Bearer), else 401 (counted)
//	POST /sessions?prefix=P&n=N[&ttl=1h]     signs N sessions of users P000000..: {"users","tokens"}
//	GET  /calls                              the counters (StandinCalls)
//	GET  /healthz                            ok
func (s *Standin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/session":
		s.session.Add(1)
		user := s.lookup(r)
		if user == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-User-ID", user)
		w.WriteHeader(http.StatusOK)
	case "/.well-known/jwks.json":
		s.jwksHits.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(s.jwks)
	case "/sessions":
		s.serveSign(w, r)
	case "/calls":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Calls())
	case "/healthz":
		_, _ = w.Write([]byte("ok"))
	default:
		http.NotFound(w, r)
	}
}

// lookup is the user of the request's session, "" when it has none the stand-in signed.
func (s *Standin) lookup(r *http.Request) string {
	tok := ""
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		tok = a[7:]
	} else if c, err := r.Cookie(StandinCookie); err == nil {
		tok = c.Value
	}
	if tok == "" {
		return ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.sessions[tok]
}

// StandinSessions is the answer of POST /sessions.
type StandinSessions struct {
	Users  []string `json:"users"`
	Tokens []string `json:"tokens"`
}

func (s *Standin) serveSign(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	prefix := q.Get("prefix")
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n <= 0 || n > 1_000_000 {
		http.Error(w, "n: 1..1000000", http.StatusBadRequest)
		return
	}
	ttl := time.Hour
	if v := q.Get("ttl"); v != "" {
		if ttl, err = time.ParseDuration(v); err != nil || ttl <= 0 {
			http.Error(w, "ttl: a positive duration", http.StatusBadRequest)
			return
		}
	}
	out := StandinSessions{Users: make([]string, n), Tokens: make([]string, n)}
	for i := range n {
		u := fmt.Sprintf("%s%06d", prefix, i)
		if !contract.ValidID(u) {
			http.Error(w, "prefix: user ids are 1 to 64 of [A-Za-z0-9_-]", http.StatusBadRequest)
			return
		}
		tok, err := s.Sign(u, ttl)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out.Users[i], out.Tokens[i] = u, tok
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// StandinProcess is a running `seckill-bench session-standin`.
type StandinProcess struct {
	URL string // base URL, http://127.0.0.1:<port>
	PID int
	p   *proc.Process
	c   *http.Client
}

// StartStandin starts exe (a seckill-bench binary) as the session stand-in on a free loopback
// port, logging to logDir/standin.log, and waits until it answers.
func StartStandin(ctx context.Context, exe, logDir string) (*StandinProcess, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := driver.StartProc(exe, []string{"session-standin", "-listen", addr}, nil, filepath.Join(logDir, "standin.log"))
	if err != nil {
		return nil, err
	}
	sp := &StandinProcess{URL: "http://" + addr, PID: p.PID(), p: p, c: &http.Client{Timeout: time.Minute}}
	if err := driver.WaitHTTP(ctx, "session stand-in", p, sp.URL+"/healthz"); err != nil {
		sp.Close()
		return nil, err
	}
	return sp, nil
}

// Close stops the stand-in.
func (sp *StandinProcess) Close() {
	if sp.p != nil {
		sp.p.Stop(5 * time.Second)
		sp.p = nil
	}
}

// Calls reads the stand-in's counters.
func (sp *StandinProcess) Calls(ctx context.Context) (StandinCalls, error) {
	var c StandinCalls
	err := sp.call(ctx, http.MethodGet, "/calls", &c)
	return c, err
}

// Sessions has the stand-in sign n sessions of users prefix000000...
func (sp *StandinProcess) Sessions(ctx context.Context, prefix string, n int) (StandinSessions, error) {
	var s StandinSessions
	err := sp.call(ctx, http.MethodPost, "/sessions?prefix="+prefix+"&n="+strconv.Itoa(n), &s)
	if err == nil && (len(s.Tokens) != n || len(s.Users) != n) {
		err = fmt.Errorf("the stand-in signed %d sessions, not %d", len(s.Tokens), n)
	}
	return s, err
}

func (sp *StandinProcess) call(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, sp.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := sp.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("stand-in %s %s: %s", method, path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// ServeStandin runs a stand-in on addr until ctx ends (the body of `seckill-bench
// session-standin`).
func ServeStandin(ctx context.Context, addr string) error {
	s, err := NewStandin()
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
