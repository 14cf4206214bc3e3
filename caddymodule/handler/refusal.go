package handler

// How every seckill handler says no: one type and one writer, so the gate, the token issuer,
// the throttle, the waiting room and the draw answer alike. The body is the contract's JSON
// {"code","message"} (plus "order_id" for already_bought), 429 and 503 carry Retry-After, and
// with handle_errors the refusal leaves the handler as a caddyhttp error for the site's
// handle_errors routes instead.

import (
	"errors"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler/core"
)

// Refusal is one refusal (core.Refusal: the cores build them without linking Caddy).
type Refusal = core.Refusal

// Generation is the sold-out memory's token (handler/core's: the cores hold it without
// linking Caddy; caddymodule.SaleEvents hands it out).
type Generation = core.Generation

// Writer writes a handler's refusals. The zero value writes JSON bodies.
type Writer struct {
	// HandleErrors hands refusals to the server's handle_errors routes as caddyhttp errors
	// (Retry-After still set) instead of writing the body.
	HandleErrors bool
	// Jitter adds a random delay in [0, Jitter) to Retry-After, so refused clients do not all
	// come back in the same second.
	Jitter time.Duration
}

// Write answers r on w. It returns the caddyhttp error with HandleErrors, else the write's.
func (wr Writer) Write(w http.ResponseWriter, r Refusal) error {
	h := w.Header()
	// The header values in one backing array, each capped to its own element (a later append
	// reallocates, and a handler rewriting one value in place touches only its own); the keys
	// are canonical already.
	n := 3
	if r.Retryable() {
		n = 4
	}
	v := make([]string, n)
	if n == 4 {
		retry := r.RetryAfter
		if wr.Jitter > 0 {
			retry += rand.N(wr.Jitter)
		}
		v[3] = strconv.FormatInt(Seconds(retry), 10)
		h["Retry-After"] = v[3:4:4]
	}
	if wr.HandleErrors {
		return caddyhttp.Error(r.Status, r)
	}
	var body []byte
	var bp *[]byte
	if cached(r) {
		body = Body(r)
	} else {
		// An order id, variant or held count: a body of its own, built in a pooled buffer.
		bp = core.Buffer()
		body = AppendBody((*bp)[:0], r)
	}
	v[0], v[1], v[2] = "application/json", "no-store", strconv.Itoa(len(body))
	h["Content-Type"], h["Cache-Control"], h["Content-Length"] = v[0:1:1], v[1:2:2], v[2:3:3]
	w.WriteHeader(r.Status)
	_, err := w.Write(body)
	if bp != nil {
		core.Release(bp, body)
	}
	return err
}

// cached tells the refusals whose body is kept: a code and a message, nothing per user.
func cached(r Refusal) bool { return r.OrderID == "" && r.Variant == "" && r.Held == 0 }

// Seconds is d rounded up to whole seconds, at least 1: the Retry-After value of d.
func Seconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// Body is the JSON body of r. Bodies without an order id, variant or held units are built
// once: a flood is answered with the same few thousands of times a second.
func Body(r Refusal) []byte {
	if !cached(r) {
		return AppendBody(nil, r)
	}
	k := bodyKey{r.Code, r.Message}
	// A plain map read: a sync.Map would box the key into an interface, one allocation per
	// refusal.
	if b, ok := (*bodies.Load())[k]; ok {
		return b
	}
	b := AppendBody(nil, r)
	bodiesMu.Lock()
	defer bodiesMu.Unlock()
	old := *bodies.Load()
	if len(old) >= maxBodies {
		return b // codes and messages are constants; past this, something is wrong: no cache
	}
	m := make(map[bodyKey][]byte, len(old)+1)
	maps.Copy(m, old)
	m[k] = b
	bodies.Store(&m)
	return b
}

// AppendBody appends the JSON body of r to dst (core.AppendBody: byte for byte what
// encoding/json writes for the contract.Refusal of r).
func AppendBody(dst []byte, r Refusal) []byte { return core.AppendBody(dst, r) }

type bodyKey struct{ code, msg string }

// bodies holds the marshalled bodies, copied on write: refusals are a small fixed set, so
// after the first few requests every lookup is a read of an immutable map.
var (
	bodies   atomic.Pointer[map[bodyKey][]byte]
	bodiesMu sync.Mutex
)

// maxBodies bounds the cache of bodies.
const maxBodies = 1024

func init() { bodies.Store(&map[bodyKey][]byte{}) }

// As finds the Refusal in err (a caddyhttp.HandlerError from Write with HandleErrors).
func As(err error) (Refusal, bool) {
	var r Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// The refusals every handler shares (handler/core's).
var (
	Unauthenticated = core.Unauthenticated
	BadRequest      = core.BadRequest
	UnknownSale     = core.UnknownSale
	NotStarted      = core.NotStarted
	Ended           = core.Ended
	SoldOut         = core.SoldOut
	Paused          = core.Paused
	AlreadyBought   = core.AlreadyBought
	Unavailable     = core.Unavailable
	// PathMismatch answers a request whose raw path names another sale than the cleaned path
	// the routes matched (/seckill/a/../b/buy).
	PathMismatch = core.PathMismatch
)

// Answer writes a handler's JSON answer (a 202 accepted, a 200 token): core.Answer, whose
// writing needs no Caddy, so a core can answer with it too.
func Answer(w http.ResponseWriter, status int, build func(body []byte) []byte) error {
	return core.Answer(w, status, build)
}
