package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI adds the seckill routes to Caddy's admin endpoint (localhost:2019 by default, so
// they inherit its access control):
//
//	GET /seckill/status   the shared connections: Redis reachability and pool, RabbitMQ state,
//	                      the relay's backlog and namespace, and whatever the handlers report
//	                      through App.AddStatus.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.seckill",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// Routes returns the admin routes.
func (adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/seckill/status", Handler: caddy.AdminHandlerFunc(handleStatus)}}
}

// Status is the body of GET /seckill/status.
type Status struct {
	Redis struct {
		Addrs        []string `json:"addrs"`
		Reachable    bool     `json:"reachable"`
		Error        string   `json:"error,omitempty"`
		ConnsOpened  int64    `json:"connections_opened"`
		TotalConns   uint32   `json:"total_connections"`
		IdleConns    uint32   `json:"idle_connections"`
		PoolTimeouts uint32   `json:"pool_timeouts"`
	} `json:"redis"`
	AMQP struct {
		URL       string `json:"url"`
		Connected bool   `json:"connected"`
		Dials     int64  `json:"dials"`
	} `json:"amqp"`
	Handlers map[string]any `json:"handlers,omitempty"`
}

// AddStatus registers a section of the status page (for example the relay's backlog).
func (a *App) AddStatus(name string, f func(context.Context) any) {
	if a.status == nil {
		a.status = map[string]func(context.Context) any{}
	}
	a.status[name] = f
}

func handleStatus(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errMethod}
	}
	a := current.Load()
	if a == nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: errNoApp}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var s Status
	s.Redis.Addrs = a.Redis.Addrs
	if err := a.redis.client.Ping(ctx).Err(); err != nil {
		s.Redis.Error = err.Error()
	} else {
		s.Redis.Reachable = true
	}
	s.Redis.ConnsOpened = a.redis.opened.Load()
	if ps := a.redis.client.PoolStats(); ps != nil {
		s.Redis.TotalConns, s.Redis.IdleConns, s.Redis.PoolTimeouts = ps.TotalConns, ps.IdleConns, ps.Timeouts
	}
	s.AMQP.URL = redacted(a.AMQP.URL)
	s.AMQP.Connected = a.broker.Connection() != nil
	s.AMQP.Dials = a.broker.dials.Load()
	if rs := a.relayStatus(); rs != nil || len(a.status) > 0 {
		s.Handlers = map[string]any{}
		if rs != nil {
			s.Handlers["relay"] = rs
		}
		for name, f := range a.status {
			s.Handlers[name] = f(ctx)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(s)
}

type adminErr string

func (e adminErr) Error() string { return string(e) }

const (
	errMethod = adminErr("method not allowed")
	errNoApp  = adminErr("the seckill app is not running")
)

// Interface guard
var _ caddy.AdminRouter = adminAPI{}
