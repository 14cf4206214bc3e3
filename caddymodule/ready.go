package caddymodule

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/seckilledge/seckill/caddymodule/handler"
)

func init() {
	caddy.RegisterModule(Ready{})
	httpcaddyfile.RegisterHandlerDirective("seckill_ready", handler.Directive[Ready])
	// The readiness endpoint answers its own path (a `handle /readyz` of its own).
	httpcaddyfile.RegisterDirectiveOrder("seckill_ready", httpcaddyfile.Before, "respond")
}

// Ready answers a readiness probe with what this gateway needs to decide: its configuration
// loaded (the seckill app provisioned, its token keys with it) and Redis answering. It never
// proxies a request and reads nothing of the buyer.
//
// How it degrades: before Redis has answered once the gateway is "starting" (503), so a new
// pod takes no traffic before it can decide. Once it has, a failing Redis makes the gateway
// "degraded" (200, still ready) for Grace, so a blip of Redis (a failover, a slow second) does
// not take every gateway out of the Service at once; a gateway still failing after Grace is
// "unready" (503) until Redis answers again. Redis is asked at most once per Interval however
// often the endpoint is called, so the public path cannot be turned into load on Redis.
//
//	seckill_ready {
//		grace    <duration>   # default 15s
//		timeout  <duration>   # default 500ms
//		interval <duration>   # default 1s
//	}
type Ready struct {
	// How long a gateway whose Redis stops answering stays ready (degraded). Default 15s; 0
	// keeps it ready for as long as Redis is down, once Redis has answered once.
	Grace caddy.Duration `json:"grace,omitempty"`
	// The longest wait for Redis's answer. Default 500ms.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// The shortest time between two questions to Redis. Default 1s.
	Interval caddy.Duration `json:"interval,omitempty"`

	app   *App
	probe *readyProbe
}

// readyProbe is a Ready's memory between probes.
type readyProbe struct {
	mu    sync.Mutex
	state *Readiness
	asked time.Time
	last  ReadyVerdict
}

// CaddyModule returns the Caddy module information.
func (Ready) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.seckill_ready",
		New: func() caddy.Module { return new(Ready) },
	}
}

// Provision takes the seckill app (and so fails when its configuration does not load).
func (r *Ready) Provision(ctx caddy.Context) error {
	a, err := ctx.App("seckill")
	if err != nil {
		return err
	}
	r.app = a.(*App)
	if r.Timeout <= 0 {
		r.Timeout = caddy.Duration(500 * time.Millisecond)
	}
	if r.Interval <= 0 {
		r.Interval = caddy.Duration(time.Second)
	}
	grace := 15 * time.Second
	if r.Grace > 0 {
		grace = time.Duration(r.Grace)
	} else if r.Grace < 0 {
		grace = 0
	}
	r.probe = &readyProbe{state: NewReadiness(grace)}
	return nil
}

// UnmarshalCaddyfile reads the block shown on Ready.
func (r *Ready) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return handler.ParseDirective(d, "seckill_ready", func(name string) (bool, error) {
		var dst *caddy.Duration
		switch name {
		case "grace":
			dst = &r.Grace
		case "timeout":
			dst = &r.Timeout
		case "interval":
			dst = &r.Interval
		default:
			return false, nil
		}
		var s string
		if err := handler.StringArg(d, &s); err != nil {
			return true, err
		}
		v, err := caddy.ParseDuration(s)
		if err != nil {
			return true, d.Errf("%s: %v", name, err)
		}
		if name == "grace" && v == 0 {
			v = -1 // "grace 0": ready for as long as Redis is down
		}
		*dst = caddy.Duration(v)
		return true, nil
	})
}

// ServeHTTP answers {"status": "..."} with 200 (ready, degraded) or 503 (starting, unready).
func (r *Ready) ServeHTTP(w http.ResponseWriter, req *http.Request, _ caddyhttp.Handler) error {
	v := r.verdict(req.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	code := http.StatusOK
	if !v.Ready {
		code = http.StatusServiceUnavailable
	}
	w.WriteHeader(code)
	_, err := w.Write([]byte(`{"status":"` + v.Status + `"}` + "\n"))
	return err
}

func (r *Ready) verdict(ctx context.Context) ReadyVerdict {
	p := r.probe
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !p.asked.IsZero() && now.Sub(p.asked) < time.Duration(r.Interval) {
		return p.last
	}
	p.asked = now
	ctx, cancel := context.WithTimeout(ctx, time.Duration(r.Timeout))
	defer cancel()
	err := r.app.redis.client.Ping(ctx).Err()
	// Resolved here, not at start: the series appears with the first check, so a gateway that
	// is never probed does not say Redis is down.
	up := redisUp.WithLabelValues("readiness")
	if err == nil {
		up.Set(1)
	} else {
		up.Set(0)
	}
	p.last = p.state.Observe(time.Now(), err)
	return p.last
}

// ReadyVerdict is what a readiness probe is told.
type ReadyVerdict struct {
	// Status is "starting", "ready", "degraded" or "unready".
	Status string
	// Ready is whether the gateway should receive traffic.
	Ready bool
}

// Readiness is the readiness decision over a series of health checks, without Caddy or a
// clock of its own: starting until the first success, ready while checks succeed, degraded
// (still ready) while they have failed for less than the grace, unready after.
type Readiness struct {
	grace  time.Duration
	everOK bool
	lastOK time.Time
}

// NewReadiness is a decision with the given grace; 0: a failure after the first success never
// makes the gateway unready.
func NewReadiness(grace time.Duration) *Readiness { return &Readiness{grace: grace} }

// Observe records a check's outcome at now and returns the verdict.
func (s *Readiness) Observe(now time.Time, err error) ReadyVerdict {
	switch {
	case err == nil:
		s.everOK, s.lastOK = true, now
		return ReadyVerdict{"ready", true}
	case !s.everOK:
		return ReadyVerdict{"starting", false}
	case s.grace == 0 || now.Sub(s.lastOK) < s.grace:
		return ReadyVerdict{"degraded", true}
	default:
		return ReadyVerdict{"unready", false}
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Ready)(nil)
	_ caddyfile.Unmarshaler       = (*Ready)(nil)
	_ caddyhttp.MiddlewareHandler = (*Ready)(nil)
)
