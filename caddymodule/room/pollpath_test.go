//go:build integration

package room

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// The poll path of a waiter answered from memory (pre-encoded answers, the
// ticket's verification cached, no allocation left that the handler can avoid). The handler
// is the real one (ServeHTTP, its room cache, its view) over the synthetic store of
// gatewaymemory_test.go; the requests are made once, so what is measured is the handler's
// own work per poll:
//
//	go test -run '^$' -bench PollFromMemory -benchmem -count 6 ./caddymodule/room/
//
// (compare two commits with benchstat.)

// discardWriter is a ResponseWriter that keeps nothing but the status and the body's size,
// its header map reused: the benchmark measures the handler, not a recorder.
type discardWriter struct {
	h      http.Header
	status int
	n      int
	body   []byte // the last body, for the checks
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int)   { w.status = s }
func (w *discardWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	w.body = append(w.body[:0], b...)
	return len(b), nil
}
func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// pollBench is a handler and the prepared polls of waiters users, far from the front.
type pollBench struct {
	h     *Room
	store *synthStore
	reqs  []*http.Request
}

func newPollBench(tb testing.TB, users int) *pollBench {
	tb.Helper()
	store := newSynthStore(1_000_000)
	h := &Room{Kit: roomkit.Kit{Subject: handler.Subject{Sale: "s1", User: "{http.request.header.X-User-ID}"}}}
	h.setDefaults()
	sealer, err := sealed.NewSealer(sealed.Key{ID: "k1", Secret: []byte(testSecret)})
	if err != nil {
		tb.Fatal(err)
	}
	h.mem.Sealer = sealer
	h.mem.Store = core.BoundStore{Store: store, Caller: h.Calls}
	h.events = noEvents{}
	exp := store.room.Ends.Add(core.TicketGrace)
	pb := &pollBench{h: h, store: store}
	for i := range users {
		user := "user" + strconv.Itoa(i)
		r := httptest.NewRequest(http.MethodGet, "/seckill/s1/queue", nil)
		r.Header.Set("X-User-ID", user)
		// Far back: answered from memory.
		r.Header.Set(sealed.HeaderTicket, sealer.TicketAt("s1", user, exp, 500_000+int64(i)))
		repl := caddy.NewReplacer()
		repl.Set("http.request.header.X-User-ID", user)
		pb.reqs = append(pb.reqs, r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl)))
	}
	return pb
}

func (pb *pollBench) poll(tb testing.TB, w *discardWriter, i int) {
	w.reset()
	if err := pb.h.ServeHTTP(w, pb.reqs[i%len(pb.reqs)], nil); err != nil || w.status != http.StatusOK {
		tb.Fatalf("poll: %v %d %s", err, w.status, w.body)
	}
}

func BenchmarkPollFromMemory(b *testing.B) {
	pb := newPollBench(b, 1000)
	w := &discardWriter{h: http.Header{}}
	for i := range len(pb.reqs) { // the room read, the view made, every ticket seen once
		pb.poll(b, w, i)
	}
	visits := pb.store.visits.Load()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		pb.poll(b, w, i)
	}
	b.StopTimer()
	if !strings.Contains(string(w.body), `"state":"waiting"`) || pb.store.visits.Load() != visits {
		b.Fatalf("the polls were not all answered from memory: %s (%d store visits)", w.body, pb.store.visits.Load()-visits)
	}
}

// The sold-out answer, from the gate's broadcast: the commonest answer at the end of a sale.
func BenchmarkPollSoldOut(b *testing.B) {
	pb := newPollBench(b, 1000)
	pb.h.events = allSoldOut{}
	w := &discardWriter{h: http.Header{}}
	for i := range len(pb.reqs) {
		pb.poll(b, w, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		pb.poll(b, w, i)
	}
	b.StopTimer()
	if !strings.Contains(string(w.body), `"state":"sold_out"`) {
		b.Fatalf("want sold_out: %s", w.body)
	}
}

// allSoldOut is a gateway whose sale events flag every sale sold out.
type allSoldOut struct{ noEvents }

func (allSoldOut) SoldOut(string) bool { return true }

var _ = time.Second
