//go:build integration

package room

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
)

// fakeStore is a Store in memory: a room for every sale, whose Room call can be held.
type fakeStore struct {
	reads   atomic.Int64
	entered chan struct{} // a Room call has started (nil: not signalled)
	hold    chan struct{} // Room calls wait for it (nil: no wait)
}

func (s *fakeStore) Room(context.Context, string) (core.SaleRoom, bool, error) {
	s.reads.Add(1)
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.hold != nil {
		<-s.hold
	}
	now := time.Now()
	return core.SaleRoom{Settings: core.Settings{Rate: 10, Oversubscribe: 1.5, Session: time.Minute},
		Starts: now.Add(-time.Minute), Ends: now.Add(time.Hour)}, true, nil
}

func (s *fakeStore) Visit(context.Context, string, core.Visit) (core.Reply, error) {
	return core.Reply{}, errors.New("not in this fake")
}

func (s *fakeStore) Public(context.Context, string) (core.Public, error) {
	return core.Public{Now: time.Now(), Stock: 3, State: "init"}, nil
}

func (s *fakeStore) Prequeue(context.Context, string, int64, int64) ([]string, int64, error) {
	return nil, 0, nil
}

// unitRoom is a provisioned Room over store, without Caddy or Redis.
func unitRoom(t *testing.T, store core.Store, limits handler.Limits) *Room {
	t.Helper()
	h := &Room{Kit: roomkit.Kit{Subject: handler.Subject{Sale: "s1", User: "{http.request.header.X-User-ID}"}, Limits: limits}}
	h.setDefaults()
	sealer, err := sealed.NewSealer(sealed.Key{ID: "k1", Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	h.mem.Sealer = sealer
	h.mem.Store = core.BoundStore{Store: store, Caller: h.Calls}
	return h
}

func serve(h *Room, method, path string) (*httptest.ResponseRecorder, error) {
	r := httptest.NewRequest(method, path, nil)
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	err := h.ServeHTTP(w, r, nil)
	return w, err
}

// With handle_errors the room's refusals leave the handler as caddyhttp errors (status, the
// contract code in the message, Retry-After still set), like the other seckill handlers';
// without it they are the contract's JSON body.
func TestRoomRefusalsGoToHandleErrorsWhenAsked(t *testing.T) {
	h := unitRoom(t, &fakeStore{}, handler.Limits{HandleErrors: true})
	w, err := serve(h, http.MethodDelete, "/seckill/s1/room")
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) || he.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %v, want a caddyhttp error 405", err)
	}
	if ref, ok := handler.As(err); !ok || ref.Code != contract.CodeBadRequest {
		t.Fatalf("DELETE: the refusal %+v is not in the error", ref)
	}
	if w.Body.Len() != 0 || w.Header().Get("Allow") != "GET" {
		t.Fatalf("DELETE: wrote %q, Allow %q; want no body and Allow GET", w.Body, w.Header().Get("Allow"))
	}

	h = unitRoom(t, &fakeStore{}, handler.Limits{})
	w, err = serve(h, http.MethodPost, "/seckill/s1/queue")
	if err != nil {
		t.Fatal(err)
	}
	var body contract.Refusal
	if w.Code != http.StatusUnauthorized || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Code != contract.CodeUnauthenticated {
		t.Fatalf("no user: %d %s, want 401 unauthenticated", w.Code, w.Body)
	}
	if w, _ := serve(h, http.MethodGet, "/seckill/a/../s1/room"); w.Code != http.StatusBadRequest {
		t.Fatalf("a path not in canonical form: %d, want 400", w.Code)
	}
}

// Beyond max_pending outstanding Redis calls the room sheds: 503 unavailable with
// Retry-After at once, without calling the store, and serves again once the call returns.
func TestRoomShedsBeyondMaxPending(t *testing.T) {
	store := &fakeStore{entered: make(chan struct{}, 1), hold: make(chan struct{})}
	h := unitRoom(t, store, handler.Limits{MaxPending: 1, Timeout: caddy.Duration(time.Minute)})
	first := make(chan int)
	go func() {
		w, _ := serve(h, http.MethodGet, "/seckill/s1/room")
		first <- w.Code
	}()
	<-store.entered // the first request holds the only slot
	before := testutil.ToFloat64(kitMetrics.Shed)
	w, err := serve(h, http.MethodGet, "/seckill/s1/room")
	if err != nil || w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("second request: %d %v Retry-After %q, want 503 with Retry-After 1", w.Code, err, w.Header().Get("Retry-After"))
	}
	if got := testutil.ToFloat64(kitMetrics.Shed) - before; got != 1 {
		t.Fatalf("shed counted %v times, want 1", got)
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("the store was called %d times, want 1 (a shed request touches nothing)", n)
	}
	close(store.hold)
	store.entered = nil
	if code := <-first; code != http.StatusOK {
		t.Fatalf("the first request: %d, want 200", code)
	}
}

// The room's settings are read again only once cache_ttl has passed on the handler's clock.
func TestRoomReadsTheSaleRoomAgainAfterCacheTTL(t *testing.T) {
	store := &fakeStore{}
	h := unitRoom(t, store, handler.Limits{})
	clock := time.Unix(1000, 0)
	h.mem.Now = func() time.Time { return clock }
	ctx := context.Background()
	for range 3 {
		if _, ok, err := h.mem.Room(ctx, "s1"); !ok || err != nil {
			t.Fatalf("Room: %v %v", ok, err)
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d reads within cache_ttl, want 1", n)
	}
	clock = clock.Add(time.Duration(h.CacheTTL))
	if _, _, err := h.mem.Room(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if n := store.reads.Load(); n != 2 {
		t.Fatalf("%d reads after cache_ttl, want 2", n)
	}
}

func (s *fakeStore) Banned(context.Context, []string, []string) (map[string]time.Time, error) {
	return nil, nil
}
