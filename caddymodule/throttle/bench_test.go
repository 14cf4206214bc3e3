package throttle

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/throttle/core"
)

// replyStore is an exact tier that answers every call at once with the same reply.
type replyStore struct{ reply core.Reply }

func (s replyStore) Eval(_ context.Context, calls []core.Call) ([]core.Reply, error) {
	out := make([]core.Reply, len(calls))
	for i := range out {
		out[i] = s.reply
	}
	return out, nil
}

func (replyStore) Undo(context.Context, []core.Refund) error { return nil }

// demoHandler is the demo Caddyfile's seckill_throttle (five zones: ip, device and user on
// /seckill/*, orders_ip and orders_user on /orders/*) on store, provisioned without the app.
func demoHandler(tb testing.TB, store core.Store) *Handler {
	tb.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	tb.Cleanup(cancel)
	match := func(p string) caddyhttp.RawMatcherSets {
		return caddyhttp.RawMatcherSets{{"path": json.RawMessage(`["` + p + `"]`)}}
	}
	sec := caddy.Duration(time.Second)
	h := &Handler{Headers: "ietf", Zones: []*Zone{
		{Name: "ip", Key: "{client_ip}", Window: 10 * sec, Limit: 100, IPv6Prefix: 64, Shadow: true, MatcherSetsRaw: match("/seckill/*")},
		{Name: "device", Key: "{http.request.header.X-Device-ID}", Window: sec, Limit: 20, MatcherSetsRaw: match("/seckill/*")},
		{Name: "user", Key: "{http.request.header.X-User-ID}", Window: sec, Limit: 5, MatcherSetsRaw: match("/seckill/*"),
			Ban: &Ban{After: 5, Within: caddy.Duration(10 * time.Minute), For: caddy.Duration(5 * time.Minute)}},
		{Name: "orders_ip", Key: "{client_ip}", Window: 10 * sec, Limit: 60, IPv6Prefix: 64, Shadow: true, MatcherSetsRaw: match("/orders/*")},
		{Name: "orders_user", Key: "{http.request.header.X-User-ID}", Window: 10 * sec, Limit: 20, MatcherSetsRaw: match("/orders/*")},
	}}
	for _, z := range h.Zones {
		if err := z.provision(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	h.logger = zap.NewNop()
	h.build(store)
	h.limiter.Now = func() time.Time { return t0 }
	return h
}

// BenchmarkThrottleDecisionAllocs is one purchase click through the demo's seckill_throttle
// (its three /seckill/* zones, the two /orders/* ones not applying), the exact tier answered
// in memory: what the handler itself allocates per decision, from the request to the answer's
// headers. "admitted": a new user and IP each time; "flood": one user over the limit, answered
// by the local blocklist (the 429 refusal written).
//
//	go test -run '^$' -bench ThrottleDecisionAllocs -benchmem -benchtime 2000x ./caddymodule/throttle/
func BenchmarkThrottleDecisionAllocs(b *testing.B) {
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	click := func(n int) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/seckill/s1/buy", nil)
		r.RemoteAddr = "10." + strconv.Itoa(n>>16&255) + "." + strconv.Itoa(n>>8&255) + "." + strconv.Itoa(n&255) + ":40000"
		r.Header.Set("X-User-ID", "u"+strconv.Itoa(n))
		caddyhttp.NewTestReplacer(r)
		return r
	}
	run := func(b *testing.B, h *Handler, req func(i int) *http.Request, want int) {
		reqs := make([]*http.Request, b.N)
		for i := range reqs {
			reqs[i] = req(i)
		}
		w := &benchWriter{h: http.Header{}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			clear(w.h)
			w.code = 0
			_ = h.ServeHTTP(w, reqs[i], next)
			if w.code != want {
				b.Fatalf("request %d: %d", i, w.code)
			}
		}
	}
	b.Run("admitted", func(b *testing.B) {
		h := demoHandler(b, replyStore{core.Reply{Remaining: 4, Reset: time.Second, Member: "1700000000000000-0"}})
		run(b, h, click, 0) // next writes nothing
	})
	b.Run("flood", func(b *testing.B) {
		h := demoHandler(b, replyStore{core.Reply{Status: 1, Retry: time.Minute, Reset: time.Minute}})
		_ = h.ServeHTTP(httptest.NewRecorder(), click(1), next) // the refusal that fills the blocklist
		run(b, h, func(int) *http.Request { return click(1) }, http.StatusTooManyRequests)
	})
}

// benchWriter is a response writer reused between requests: it keeps the status only.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestZonesSharingMatchersAreCountedOnlyWhereTheyApply(t *testing.T) {
	store := &fakeStore{replies: map[string]core.Reply{}}
	h := demoHandler(t, store)
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	for _, c := range []struct {
		path string
		want []string // counter keys of the one round trip, in limiter order
	}{
		{"/seckill/s1/buy", []string{"seckill:rl:{user:u7}", "seckill:rl:{ip:10.0.0.7}"}},
		{"/orders/o1", []string{"seckill:rl:{orders_user:u7}", "seckill:rl:{orders_ip:10.0.0.7}"}},
		{"/other", nil},
	} {
		store.trips = nil
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		r.RemoteAddr = "10.0.0.7:40000"
		r.Header.Set("X-User-ID", "u7")
		caddyhttp.NewTestReplacer(r)
		_ = h.ServeHTTP(&benchWriter{h: http.Header{}}, r, next)
		var got []string
		for _, trip := range store.trips {
			for _, call := range trip {
				got = append(got, call.Key)
			}
		}
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: counted in %v, want %v", c.path, got, c.want)
		}
	}
}
