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
	"unicode/utf8"

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

// AppendBody appends the JSON body of r to dst: byte for byte what encoding/json writes for
// the contract.Refusal of r (FuzzAppendBodyIsEncodingJSONs holds them equal), without its
// reflection and allocations.
func AppendBody(dst []byte, r Refusal) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendString(dst, r.Code)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, r.Message)
	if r.OrderID != "" {
		dst = append(dst, `,"order_id":`...)
		dst = appendString(dst, r.OrderID)
	}
	if r.Variant != "" {
		dst = append(dst, `,"variant":`...)
		dst = appendString(dst, r.Variant)
	}
	if r.Held != 0 {
		dst = append(dst, `,"held":`...)
		dst = strconv.AppendInt(dst, int64(r.Held), 10)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json.Marshal does: HTML-safe (<, >
// and & as \u00XX), \b \f \n \r \t by name, other control bytes as \u00XX, invalid UTF-8
// as \ufffd, and U+2028 and U+2029 escaped (JavaScript reads them as line ends).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

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
