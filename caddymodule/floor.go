package caddymodule

import (
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// A purchase's floor is its handlers standing together in one route: an identity
// (seckill_identity, seckill_session), a seckill_throttle, then the decision (seckill_gate or
// seckill_token), each optional but the decision, in that order and adjacent. The app runs them
// as one handler: it links each to the next when it starts, so that each calls the next
// directly (handler.Next, handler.Decision) instead of through Caddy's chain, and the
// throttle's zones run inside the decision's one script call on a single Redis (docs/gate.md,
// "One handler per purchase"; docs/throttle.md, "One round trip with the gate"). Caddy
// provisions handlers one by one and tells none of them its neighbours, so this is the one
// place that knows the shape: within one route a handler's next is exactly the route's next
// handler, whatever the request. Anything else (a throttle last in its route, a handler of
// another module between them, a decision in another route) stays Caddy's chain, and the
// throttle calls Redis itself. On a Redis Cluster the handlers are linked but the zones keep
// their own call: their keys and the sale's hash to other slots.
//
// A route holding two or more handlers that answer paths under the prefix (seckill_token,
// seckill_gate, seckill_draw, seckill_room; one of them a decision) is a dispatched route: the
// site's one route for the edge's paths (docs/gate.md, "One route for the edge's paths").
// linkDispatch gives it a handler.Dispatch: each of those handlers answers its own paths and
// passes the rest, and the stages before them act only on the paths one of them answers.

// zonesStage is a handler that can hand its requests, and its zones, to the decision after it
// (seckill_throttle).
type zonesStage interface {
	caddyhttp.MiddlewareHandler
	LinkDecision(d handler.Decision, joined bool)
}

// zonesFloor and identityFloor are the throttle and the identity as stages of a dispatched route
// (handler.Dispatch).
type zonesFloor interface {
	LinkFloor(d *handler.Dispatch, direct, joined bool)
}

type identityFloor interface {
	LinkFloor(d *handler.Dispatch)
}

// identityStage is a handler that can hand the requests it admits to the rest of the floor
// (seckill_identity, seckill_session).
type identityStage interface {
	caddyhttp.MiddlewareHandler
	LinkNext(next caddyhttp.Handler)
}

// linkFloors links the purchase floors of the http app's routes. It returns how many floors it
// linked and in how many the zones joined the decision's script call.
func (a *App) linkFloors() (floors, joined int) {
	if a.redis == nil {
		return 0, 0
	}
	_, single := a.redis.client.(*redis.Client)
	httpApp, err := a.ctx.AppIfConfigured("http")
	if err != nil {
		return 0, 0
	}
	hs, ok := httpApp.(*caddyhttp.App)
	if !ok {
		return 0, 0
	}
	for _, srv := range hs.Servers {
		f, j := linkRoutes(srv.Routes, single)
		floors, joined = floors+f, joined+j
		if srv.Errors != nil {
			f, j := linkRoutes(srv.Errors.Routes, single)
			floors, joined = floors+f, joined+j
		}
	}
	if floors > 0 {
		a.logger.Info("purchase routes run as one handler",
			zap.Int("routes", floors), zap.Int("zones_in_the_decision_call", joined))
	}
	return floors, joined
}

// linkRoutes links the floors of routes (and of their subroutes): each decision to the
// throttle right before it, and that throttle (or the decision) to the identity right before.
// single says the zones may join the decision's script call.
func linkRoutes(routes caddyhttp.RouteList, single bool) (floors, joined int) {
	for _, rt := range routes {
		hs := rt.Handlers
		if f, j, ok := linkDispatch(hs, single); ok {
			floors, joined = floors+f, joined+j
			continue
		}
		for i, h := range hs {
			if sub, ok := h.(*caddyhttp.Subroute); ok {
				f, j := linkRoutes(sub.Routes, single)
				floors, joined = floors+f, joined+j
				continue
			}
			d, ok := h.(handler.Decision)
			if !ok {
				continue
			}
			var top caddyhttp.MiddlewareHandler = d
			k := i - 1
			if k >= 0 {
				if z, ok := hs[k].(zonesStage); ok {
					z.LinkDecision(d, single)
					if single {
						joined++
					}
					top, k = z, k-1
				}
			}
			if k >= 0 {
				if id, ok := hs[k].(identityStage); ok {
					id.LinkNext(handler.Direct(top))
					k--
				}
			}
			if k < i-1 {
				floors++
			}
		}
	}
	return floors, joined
}

// linkDispatch links a dispatched route: one whose handlers include two or more that answer
// paths under the prefix (handler.Shared: seckill_token, seckill_gate, seckill_draw,
// seckill_room), one of them a decision, all under the same prefix. No route of another shape
// is touched (ok false), so a route written for one handler behaves as it always has. Each
// Shared handler gets the route's dispatch and passes the requests it does not answer; the
// throttle right before the first of them (and the identity right before the throttle, or
// before the first of them) act only on requests some handler of the route answers, and hand a
// token or a purchase straight to its decision, the zones in its script call when single.
func linkDispatch(hs []caddyhttp.MiddlewareHandler, single bool) (floors, joined int, ok bool) {
	var (
		shared    []handler.Shared
		first     = -1
		decisions int
		prefix    string
	)
	for i, h := range hs {
		s, isShared := h.(handler.Shared)
		if !isShared {
			continue
		}
		p, _ := s.Paths()
		if first < 0 {
			first, prefix = i, p
		} else if p != prefix {
			return 0, 0, false
		}
		if _, isDecision := h.(handler.Decision); isDecision {
			decisions++
		}
		shared = append(shared, s)
	}
	if len(shared) < 2 || decisions == 0 {
		return 0, 0, false
	}
	d := handler.NewDispatch(prefix, shared)
	for i, s := range shared {
		s.Share(d, i)
	}
	// The stages before the first Shared handler, nearest first: the throttle right before it
	// and the identity right before that are linked through; any earlier one (a throttle of
	// network zones before the identity) only skips the requests of no handler of the route.
	var top caddyhttp.MiddlewareHandler = d
	direct := true
stages:
	for k := first - 1; k >= 0; k-- {
		switch h := hs[k].(type) {
		case zonesFloor:
			if direct && top == caddyhttp.MiddlewareHandler(d) {
				h.LinkFloor(d, true, single)
				if single {
					joined++
				}
				top = hs[k]
				continue
			}
			h.LinkFloor(d, false, false)
			direct = false
		case identityFloor:
			h.LinkFloor(d)
			if id, isID := hs[k].(identityStage); isID && direct {
				id.LinkNext(handler.Direct(top))
			}
			direct = false
		default:
			break stages
		}
	}
	return 1, joined, true
}
