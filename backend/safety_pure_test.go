package backend

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestATrickledHeaderOrBodyIsCutOffWithinTheLimit(t *testing.T) {
	for name, l := range map[string]serverLimits{"orders": orderLimits, "admin": adminLimits} {
		if l.ReadHeader <= 0 || l.Idle <= 0 || l.MaxHeaderBytes <= 0 || l.MaxHeaderBytes > 64<<10 || (l.Read <= 0 && l.Body <= 0) {
			t.Fatalf("%s listener limits %+v: every limit must be set", name, l)
		}
	}
	if orderLimits.Write <= 0 {
		t.Fatal("the order listener has no write timeout")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(204)
	})
	for name, l := range map[string]serverLimits{
		"orders": {ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond, Write: time.Second, Idle: time.Second, MaxHeaderBytes: 4096},
		"admin":  {ReadHeader: 300 * time.Millisecond, Body: 600 * time.Millisecond, Idle: time.Second, MaxHeaderBytes: 4096},
	} {
		srv := httptest.NewUnstartedServer(nil)
		srv.Config = newServer(h, l)
		srv.Start()
		addr := strings.TrimPrefix(srv.URL, "http://")
		for _, tc := range []struct {
			what, head string
			limit      time.Duration
		}{
			{"header", "GET /healthz HTTP/1.1\r\nHost: x\r\n", l.ReadHeader},
			{"body", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", max(l.Read, l.Body)},
		} {
			// The server's clock starts when it accepts the connection, so the client's starts
			// before it dials: a client scheduled late after the dial would otherwise see the
			// cut come early.
			start := time.Now()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(c, tc.head)
			cut := make(chan time.Duration, 1)
			go func() {
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						cut <- time.Since(start)
						return
					}
				}
			}()
			// One byte every 50 ms: each arrives well within any per-read timeout.
			var took time.Duration
		trickle:
			for i := 0; ; i++ {
				select {
				case took = <-cut:
					break trickle
				case <-time.After(50 * time.Millisecond):
					if time.Since(start) > 10*time.Second {
						t.Fatalf("%s: a trickled %s was never cut", name, tc.what)
					}
					if tc.what == "header" {
						_, _ = io.WriteString(c, "X-"+strconv.Itoa(i)+": y\r\n")
					} else {
						_, _ = io.WriteString(c, "a")
					}
				}
			}
			c.Close()
			if took < tc.limit-50*time.Millisecond || took > tc.limit+time.Second {
				t.Errorf("%s: trickled %s cut after %v, limit %v", name, tc.what, took, tc.limit)
			}
		}
		srv.Close()
	}
}
