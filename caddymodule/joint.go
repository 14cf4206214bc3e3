package caddymodule

import (
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// A joint is a seckill_throttle whose zones run inside the script call of the handler right
// after it in the same route (seckill_gate): one Redis round trip per purchase instead of two
// (docs/throttle.md, "One round trip"). Caddy provisions handlers one by one and tells none of
// them its neighbours, so the app links them at start, from the provisioned routes of the
// http app: a throttle's next handler within one route is exactly the route's next handler,
// whatever the request. Anything else (the throttle last in its route, a next handler that
// takes no joint, a Redis Cluster, where the zones' keys and the sale's hash to other slots)
// keeps the throttle calling Redis itself.

// jointSource is a handler that can leave its check to the next one (seckill_throttle).
type jointSource interface{ JoinNext(joined bool) }

// jointSink is a handler that runs the check of the handler before it (seckill_gate).
type jointSink interface{ TakesJoint() bool }

// linkJoints links every throttle of the http app's routes to the handler after it, when that
// one takes joints and the Redis is a single server. It returns how many it linked.
func (a *App) linkJoints() int {
	if a.redis == nil {
		return 0
	}
	_, single := a.redis.client.(*redis.Client)
	httpApp, err := a.ctx.AppIfConfigured("http")
	if err != nil {
		return 0
	}
	hs, ok := httpApp.(*caddyhttp.App)
	if !ok {
		return 0
	}
	n := 0
	for _, srv := range hs.Servers {
		n += linkRoutes(srv.Routes, single)
		if srv.Errors != nil {
			n += linkRoutes(srv.Errors.Routes, single)
		}
	}
	if n > 0 {
		a.logger.Info("throttles decide in the next handler's script call", zap.Int("routes", n))
	}
	return n
}

func linkRoutes(routes caddyhttp.RouteList, single bool) int {
	n := 0
	for _, rt := range routes {
		for i, h := range rt.Handlers {
			if sub, ok := h.(*caddyhttp.Subroute); ok {
				n += linkRoutes(sub.Routes, single)
				continue
			}
			src, ok := h.(jointSource)
			if !ok {
				continue
			}
			joined := false
			if single && i+1 < len(rt.Handlers) {
				sink, ok := rt.Handlers[i+1].(jointSink)
				joined = ok && sink.TakesJoint()
			}
			src.JoinNext(joined)
			if joined {
				n++
			}
		}
	}
	return n
}
