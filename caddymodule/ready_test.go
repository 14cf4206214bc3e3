//go:build integration

package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckilledge/seckill/internal/handlertest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// Starting until Redis has answered once; a blip shorter than the grace keeps the gateway
// ready (degraded); a failure longer than the grace takes it out; an answer brings it back.
func TestReadinessDegradesThroughABlipAndFailsOnlyAfterTheGrace(t *testing.T) {
	down := errors.New("redis: connection refused")
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := NewReadiness(15 * time.Second)
	for _, step := range []struct {
		at   float64
		err  error
		want ReadyVerdict
	}{
		{0, down, ReadyVerdict{"starting", false}},
		{1, down, ReadyVerdict{"starting", false}},
		{2, nil, ReadyVerdict{"ready", true}},
		{3, down, ReadyVerdict{"degraded", true}},
		{16.9, down, ReadyVerdict{"degraded", true}},
		{17, down, ReadyVerdict{"unready", false}},
		{40, down, ReadyVerdict{"unready", false}},
		{41, nil, ReadyVerdict{"ready", true}},
		{42, down, ReadyVerdict{"degraded", true}},
	} {
		if got := r.Observe(at(step.at), step.err); got != step.want {
			t.Errorf("at %vs (err %v): %+v, want %+v", step.at, step.err, got, step.want)
		}
	}
	// Grace 0: ready for as long as Redis is down, once it has answered.
	r = NewReadiness(0)
	r.Observe(at(0), nil)
	if got := r.Observe(at(3600), down); got != (ReadyVerdict{"degraded", true}) {
		t.Errorf("grace 0, an hour down: %+v", got)
	}
}

// switchableProxy forwards TCP to target while on; off, it cuts every connection and refuses
// new ones (a Redis that stops answering, from the gateway's side).
type switchableProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	on     bool
	conns  []net.Conn
}

func newSwitchableProxy(t *testing.T, target string, on bool) *switchableProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchableProxy{ln: ln, target: target, on: on}
	t.Cleanup(func() { ln.Close(); p.set(false) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if !p.on {
				p.mu.Unlock()
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *switchableProxy) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
	if !on {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// The endpoint through a real gateway and a real Redis: 503 "starting" until Redis answers,
// 200 "ready", 200 "degraded" while Redis is cut for less than the grace (5 s), 503 "unready" after,
// 200 again once Redis is back.
func TestTheReadyEndpointWaitsForRedisAndRidesOutABlip(t *testing.T) {
	testenv.NeedsServices(t, "Redis")
	proxy := newSwitchableProxy(t, testenv.RedisAddr(), false)
	port := testenv.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	src := fmt.Sprintf(`{
	admin off
	seckill {
		redis {
			addrs %s
			dial_timeout 200ms
			read_timeout 200ms
		}
		relay {
			disabled
		}
	}
}
:%d {
	handle /readyz {
		seckill_ready {
			grace 5s
			interval 100ms
			timeout 300ms
		}
	}
	handle /healthz {
		respond "ok"
	}
}
`, proxy.ln.Addr(), port)
	handlertest.StartCaddy(t, adapt(t, src), base)

	status := func() (int, string) {
		t.Helper()
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(code int, body string) {
		t.Helper()
		var gc int
		var gb string
		testenv.WaitFor(t, 10*time.Second, "readyz "+body, func() bool {
			gc, gb = status()
			return gc == code && gb == `{"status":"`+body+`"}`+"\n"
		})
	}
	if c, b := status(); c != 503 || b != `{"status":"starting"}`+"\n" {
		t.Fatalf("before Redis answered: %d %s", c, b)
	}
	proxy.set(true)
	waitFor(200, "ready")
	if v := testutil.ToFloat64(redisUp.WithLabelValues("readiness")); v != 1 {
		t.Errorf("seckill_redis_up %v while Redis answers", v)
	}
	proxy.set(false)
	cut := time.Now()
	waitFor(200, "degraded")
	if v := testutil.ToFloat64(redisUp.WithLabelValues("readiness")); v != 0 {
		t.Errorf("seckill_redis_up %v while Redis is cut", v)
	}
	if time.Since(cut) >= 5*time.Second {
		t.Fatal("the blip outlasted the grace before it was seen: the test proves nothing")
	}
	waitFor(503, "unready")
	if time.Since(cut) < 5*time.Second {
		t.Errorf("unready %v after Redis was cut, before the 5s grace", time.Since(cut))
	}
	proxy.set(true)
	waitFor(200, "ready")
}
