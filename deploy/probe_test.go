//go:build integration

package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A subtest for concurrently: its name and body, as t.Run takes them.
type subtest struct {
	name string
	f    func(*testing.T)
}

// concurrently runs the subtests at once (t.Run may be called from several goroutines) and
// returns when all have, so the waits the shipped timeouts impose (a trickled header is cut at
// read_header, 5 s; a truncated body at read_body, 10 s) overlap instead of adding up. Each
// subtest passes or fails on its own, as with t.Run; the ones around them keep their order.
func concurrently(t *testing.T, subtests ...subtest) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range subtests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(s.name, s.f)
		}()
	}
	wg.Wait()
}

// A request header trickled one byte at a time is cut once read_header (5 s) has passed,
// instead of holding a gateway connection for as long as the client likes.
func trickledHeader(t *testing.T, g *gateway) {
	const readHeader, slack = 5 * time.Second, 3 * time.Second
	c, err := net.Dial("tcp", hostPort(g.Base))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c) // returns when the server closes the connection
		closed <- time.Since(start)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(readHeader + slack)
	for {
		select {
		case d := <-closed:
			if d < readHeader-time.Second {
				t.Fatalf("the connection was cut after %v, before read_header (%v)", d, readHeader)
			}
			t.Logf("trickled header cut after %v", d.Round(10*time.Millisecond))
			return
		case <-tick.C:
			_, _ = c.Write([]byte("x")) // an error here means closed: the reader reports it
		case <-limit:
			t.Fatalf("a trickled header still held the connection after %v (read_header %v)", readHeader+slack, readHeader)
		}
	}
}

// Every route of the Caddyfile, every method, and bodies that are absent, malformed JSON,
// chunked garbage, or shorter than their Content-Length: nothing is a 502, no error is anything
// but JSON with a code, and a body the proxy cannot read is the client's 400 bad_request.
func probe(t *testing.T, g *gateway, production bool) {
	sale := g.newSale(t, 5)
	order := uuid.NewString()
	routes := []string{
		"/healthz", "/", "/nothing", "/seckill/", "/seckill/" + sale + "/token", "/seckill/" + sale + "/buy",
		"/seckill/" + sale + "/nothing", "/orders/", "/orders/" + order, "/orders/" + order + "/pay",
	}
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "PROPFIND", "BREW"}
	bodies := []struct {
		name, headers, body string
	}{
		{"no body", "Content-Length: 0\r\n", ""},
		{"malformed JSON", "Content-Type: application/json\r\nContent-Length: 11\r\n", `{"variant":`},
		{"chunked garbage", "Transfer-Encoding: chunked\r\n", "zz\r\nnot a chunk\r\n"},
		{"truncated", "Content-Type: application/json\r\nContent-Length: 100\r\n", `{"variant":"a"`},
	}

	type result struct {
		what string
		raw  []byte
		err  error
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []result
		sem     = make(chan struct{}, 64)
	)
	for _, route := range routes {
		for _, method := range methods {
			for _, b := range bodies {
				// Each request is a different person on a different address, so throttle zones
				// never turn the probe into a string of 429s.
				user := testenv.ID("p")
				var id string
				if production {
					id = "Cookie: session=" + g.Shop.signIn(user) + "\r\n"
				} else {
					id = "X-User-ID: " + user + "\r\n"
				}
				raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nX-Forwarded-For: %s\r\n%s%s\r\n%s",
					method, route, newIP(), id, b.headers, b.body)
				what := fmt.Sprintf("%s %s (%s)", method, route, b.name)
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					// The truncated body is only cut by read_body (10 s).
					out, err := rawExchange(hostPort(g.Base), []byte(raw), 30*time.Second)
					mu.Lock()
					results = append(results, result{what, out, err})
					mu.Unlock()
				}()
			}
		}
	}
	wg.Wait()

	bad := 0
	for _, r := range results {
		method := strings.Fields(r.what)[0]
		problem := ""
		var resp *http.Response
		var body []byte
		if r.err != nil || len(r.raw) == 0 {
			problem = fmt.Sprintf("no answer (%v)", r.err)
		} else if p, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(r.raw)), &http.Request{Method: method}); err != nil {
			problem = fmt.Sprintf("unparsable answer %q", r.raw)
		} else {
			resp = p
			body, _ = io.ReadAll(resp.Body)
			var v struct {
				Code string `json:"code"`
			}
			switch {
			case resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable:
				problem = "status " + resp.Status
			case resp.StatusCode >= 400 && method != "HEAD" && (json.Unmarshal(body, &v) != nil || v.Code == ""):
				problem = fmt.Sprintf("status %d with a body that is not a JSON refusal: %q", resp.StatusCode, body)
			case strings.HasPrefix(r.what, method+" /orders/") && (strings.HasSuffix(r.what, "(chunked garbage)") || strings.HasSuffix(r.what, "(truncated)")) &&
				(resp.StatusCode != http.StatusBadRequest || method != "HEAD" && v.Code != contract.CodeBadRequest):
				problem = fmt.Sprintf("an unreadable body to the proxy is %d %q, want 400 bad_request", resp.StatusCode, body)
			}
		}
		if problem != "" {
			bad++
			if bad <= 25 {
				t.Errorf("%s: %s", r.what, problem)
			}
		}
	}
	if bad > 25 {
		t.Errorf("... and %d more", bad-25)
	}
	t.Logf("%d requests probed, %d bad", len(results), bad)
}
