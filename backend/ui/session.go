package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
)

// Cockpit sessions. The page's cookie holds a session id, never the admin
// token: a leaked cookie (a proxy log, a browser profile) then opens the page for at most one
// session, which sign-out or a restart ends, and gives away no token that the API and seckillctl
// accept. Sessions live in the backend's memory only: a restart signs everyone out, and each
// backend instance has sessions of its own (one listener per operator is the deployment; a
// load balancer in front of several would need sticky routing).

const (
	// sessionIdle ends a session after this long without a request from its page. An open page
	// keeps its session alive through its event stream.
	sessionIdle = 12 * time.Hour
	// sessionLifetime ends a session this long after sign-in, however busy: a stolen id is not
	// good forever, and a wall screen signs in again once a day.
	sessionLifetime = 24 * time.Hour
	// maxSessions bounds the map: only a valid admin or viewer token opens a session, so the
	// bound protects memory from a runaway script, not from strangers. When full, the session
	// seen least recently goes.
	maxSessions = 1024
)

type session struct {
	who     httpapi.Principal
	created time.Time
	seen    time.Time
}

// sessions is the bounded, in-memory set of cockpit sessions. Keys are SHA-256 digests of the
// ids, so a heap dump shows no usable cookie.
type sessions struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

func newSessions() *sessions { return &sessions{m: map[[sha256.Size]byte]*session{}} }

// open starts a session for who and returns its id: 32 random bytes, base64url.
func (ss *sessions) open(who httpapi.Principal, now time.Time) string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24)
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= maxSessions {
		ss.sweepLocked(now)
	}
	if len(ss.m) >= maxSessions {
		var oldest [sha256.Size]byte
		var at time.Time
		for k, s := range ss.m {
			if at.IsZero() || s.seen.Before(at) {
				oldest, at = k, s.seen
			}
		}
		delete(ss.m, oldest)
	}
	ss.m[sha256.Sum256([]byte(id))] = &session{who: who, created: now, seen: now}
	return id
}

// get returns the session's principal and marks it seen; an expired session is removed.
func (ss *sessions) get(id string, now time.Time) (httpapi.Principal, bool) {
	if id == "" {
		return httpapi.Principal{}, false
	}
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok {
		return httpapi.Principal{}, false
	}
	if expired(s, now) {
		delete(ss.m, k)
		return httpapi.Principal{}, false
	}
	s.seen = now
	return s.who, true
}

// revoke ends a session (sign-out).
func (ss *sessions) revoke(id string) {
	ss.mu.Lock()
	delete(ss.m, sha256.Sum256([]byte(id)))
	ss.mu.Unlock()
}

func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

func (ss *sessions) sweepLocked(now time.Time) {
	for k, s := range ss.m {
		if expired(s, now) {
			delete(ss.m, k)
		}
	}
}

func expired(s *session, now time.Time) bool {
	return now.Sub(s.seen) >= sessionIdle || now.Sub(s.created) >= sessionLifetime
}
