package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Doer sends one request and classifies the answer.
type Doer interface {
	Do(ctx context.Context, r Request) Response
}

// NetHTTP is a Doer on net/http (the reference client: complete, and several times costlier
// per request than Raw).
type NetHTTP struct{ Client *http.Client }

// Do sends r with net/http.
func (n NetHTTP) Do(ctx context.Context, r Request) Response { return Do(ctx, n.Client, r) }

// Raw is a minimal HTTP/1.1 keep-alive client for loopback load: it writes the request bytes
// itself and parses only the status line, Content-Length, chunked bodies and Connection: close.
// On a 2-core machine the load generator shares the CPU with the servers it measures; net/http
// spends several times more CPU per request than this (allocation, header maps, its connection
// pool's bookkeeping), CPU the servers then lack. Every contestant is driven by the same client.
type Raw struct {
	// Timeout bounds one request (default 30 s); a timeout is an "error" outcome.
	Timeout time.Duration
	// MaxConns bounds the connections per host (0: unbounded; the load model bounds them).
	MaxConns int

	mu    sync.Mutex
	idle  map[string][]*rawConn
	count map[string]int
}

type rawConn struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

// NewRaw returns a Raw client.
func NewRaw(maxConns int) *Raw {
	return &Raw{MaxConns: maxConns, idle: map[string][]*rawConn{}, count: map[string]int{}}
}

func (c *Raw) get(ctx context.Context, host string) (*rawConn, error) {
	c.mu.Lock()
	if l := c.idle[host]; len(l) > 0 {
		rc := l[len(l)-1]
		c.idle[host] = l[:len(l)-1]
		c.mu.Unlock()
		return rc, nil
	}
	c.count[host]++
	c.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		c.mu.Lock()
		c.count[host]--
		c.mu.Unlock()
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &rawConn{c: nc, r: bufio.NewReaderSize(nc, 8<<10), buf: make([]byte, 0, 1024)}, nil
}

func (c *Raw) put(host string, rc *rawConn, reuse bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reuse && (c.MaxConns <= 0 || len(c.idle[host]) < c.MaxConns) {
		c.idle[host] = append(c.idle[host], rc)
		return
	}
	c.count[host]--
	_ = rc.c.Close()
}

// Close closes the idle connections.
func (c *Raw) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, l := range c.idle {
		for _, rc := range l {
			_ = rc.c.Close()
		}
		delete(c.idle, h)
	}
}

// Do sends r and reads the answer.
func (c *Raw) Do(ctx context.Context, r Request) Response {
	u, err := url.Parse(r.URL)
	if err != nil || u.Scheme != "http" {
		return Response{Outcome: "error", Err: fmt.Errorf("raw client: only http:// URLs: %q", r.URL), At: time.Now()}
	}
	host := u.Host
	if u.Port() == "" {
		host += ":80"
	}
	rc, err := c.get(ctx, host)
	if err != nil {
		return Response{Outcome: "error", Err: err, At: time.Now()}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	_ = rc.c.SetDeadline(time.Now().Add(timeout))
	b := rc.buf[:0]
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, u.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, u.Host...)
	b = append(b, "\r\nUser-Agent: seckill-bench\r\n"...)
	for k, vs := range r.Header {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if len(r.Body) > 0 || method == http.MethodPost || method == http.MethodPut {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(r.Body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, r.Body...)
	rc.buf = b
	if _, err := rc.c.Write(b); err != nil {
		c.put(host, rc, false)
		return Response{Outcome: "error", Err: err, At: time.Now()}
	}
	status, body, keep, err := readResponse(rc.r)
	if err != nil {
		c.put(host, rc, false)
		return Response{Status: status, Outcome: "error", Err: err, At: time.Now()}
	}
	c.put(host, rc, keep)
	out := Response{Status: status, Body: body, At: time.Now()}
	out.Outcome, out.OrderID = Classify(status, body)
	return out
}

var errMalformed = errors.New("raw client: malformed response")

// readResponse parses one HTTP/1.1 response: status, headers (Content-Length,
// Transfer-Encoding: chunked, Connection: close), body (at most 64 KiB kept).
func readResponse(r *bufio.Reader) (status int, body []byte, keep bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, errMalformed
	}
	keep = line[7] == '1'
	length, chunked := -1, false
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return status, nil, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case asciiEqualFold(k, "content-length"):
			if length, err = strconv.Atoi(string(v)); err != nil || length < 0 {
				return status, nil, false, errMalformed
			}
		case asciiEqualFold(k, "transfer-encoding"):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case asciiEqualFold(k, "connection"):
			if bytes.EqualFold(v, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(v, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	switch {
	case status == 204 || status == 304 || (status >= 100 && status < 200):
		return status, nil, keep, nil
	case chunked:
		body, err = readChunked(r)
		return status, body, keep, err
	case length >= 0:
		body = make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return status, nil, false, err
		}
		if len(body) > 64<<10 {
			body = body[:64<<10]
		}
		return status, body, keep, nil
	default: // until close
		body, err = io.ReadAll(io.LimitReader(r, 64<<10))
		return status, body, false, err
	}
}

func readChunked(r *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return nil, errMalformed
		}
		if n == 0 {
			// trailers until the blank line
			for {
				t, err := r.ReadSlice('\n')
				if err != nil {
					return nil, err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return body, nil
				}
			}
		}
		chunk := make([]byte, n)
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, err
		}
		if len(body) < 64<<10 {
			body = append(body, chunk...)
		}
		if _, err := r.Discard(2); err != nil { // CRLF
			return nil, err
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	return len(b) == len(s) && bytes.EqualFold(b, []byte(s))
}
