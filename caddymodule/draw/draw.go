// Package draw is the `seckill_draw` handler: the edge of a sale in draw mode (DESIGN.md,
// "Draws"; docs/draw.md). It takes entries, changes of size and withdrawals in the draw's window
// with one atomic script call each (lua/draw_enter.lua), answers an entrant where his entry
// stands (lua/draw_status.lua), serves the entry page, and issues the proof-of-work challenges
// of draw sales as the waiting room does (caddymodule/sealed). The draw itself, its
// result, the entries and the proofs are the backend's.
package draw

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/draw/core"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/contract"
)

func init() {
	caddy.RegisterModule(Draw{})
}

// Draw is the `seckill_draw` handler. It answers /seckill/{sale}/draw (POST enters or changes
// the size, DELETE withdraws, GET tells the state, or serves the entry page to a browser) and
// /seckill/{sale}/draw/challenge itself. On /seckill/{sale}/challenge it answers for draw sales
// only and hands any other sale to the next handler, and any other path too: placed just
// before seckill_room in one route, one Caddyfile route serves the challenges of both kinds of
// sale (a sale is a draw or has a room, never both).
type Draw struct {
	// sale, user, difficulty_rate, the challenges' options, frame_ancestors, page,
	// retry_after, cache_ttl (how long a gateway keeps a sale's draw settings: the window and
	// the difficulty are checked again by the entry script in Redis, so a stale copy never
	// lets an entry through), and the limits (timeout, default 1s per Redis call,
	// max_pending, handle_errors): what the draw shares with the waiting room (roomkit.Kit).
	roomkit.Kit

	// mem is what this gateway knows of the draws (caddymodule/draw/core).
	mem *core.Gateway
}

// CaddyModule returns the Caddy module information.
func (Draw) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Draw]("http.handlers.seckill_draw")
}

// Provision sets defaults and takes the app's Redis client and token keys (the draw's
// challenges are sealed as the waiting room's). No network I/O.
func (h *Draw) Provision(ctx caddy.Context) error {
	h.Logger = edge.SampledLogger(ctx.Logger())
	h.setDefaults()
	app, err := h.Kit.Provision(ctx, "seckill_draw", pageKind)
	if err != nil {
		return err
	}
	h.mem.Store = core.RedisStore{Client: app.RedisClient(), Caller: h.Calls}
	registerMetrics(ctx.GetMetricsRegistry())
	return nil
}

func (h *Draw) setDefaults() {
	h.Kit.SetDefaults("draw", roomkit.Metrics{Requests: requests, Challenges: challenges, Shed: shed})
	h.mem = &core.Gateway{CacheTTL: time.Duration(h.CacheTTL), DifficultyRate: h.DifficultyRate, Now: time.Now}
}

// Validate checks the configuration.
func (h *Draw) Validate() error {
	switch {
	case h.DifficultyRate <= 0:
		return fmt.Errorf("seckill_draw: difficulty_rate must be positive")
	case h.CacheTTL < 0:
		return fmt.Errorf("seckill_draw: cache_ttl must not be negative")
	}
	return h.Kit.Validate("seckill_draw")
}

// drawRoutes are the draw's endpoints, by the path's end: /challenge is the waiting room's
// too (sharedChallenge).
var drawRoutes = handler.NewRoutes(
	handler.Route{Suffix: "/draw/challenge", Endpoint: "challenge"},
	handler.Route{Suffix: "/draw", Endpoint: "draw"},
	handler.Route{Suffix: "/challenge", Endpoint: endpointShared},
)

// endpointShared is the route of the path the draw shares with the waiting room.
const endpointShared = "shared_challenge"

// ServeHTTP routes by the path's end (drawRoutes). Refusals go through the shared refusal writer: the
// contract's JSON body, or a caddyhttp error with handle_errors.
func (h *Draw) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	endpoint, ok := drawRoutes.Match(r.URL.Path)
	switch {
	case !ok:
		// Not a draw path: the handler shares a route with the waiting room's (see
		// caddyfile.go), which answers the rest; a room's poll pays no more than this match.
		return next.ServeHTTP(w, r)
	case (endpoint == endpointShared || endpoint == "challenge") && !handler.SameOrigin(r):
		// A challenge spends the user's open-challenge allowance: never for another site (the
		// waiting room refuses the shared path alike).
		return h.Endpoints.Refuse(w, "challenge", handler.CrossSite)
	case endpoint == endpointShared:
		// The shared challenge path: ours only for a draw sale.
		return h.sharedChallenge(w, r, next, repl, repl.ReplaceAll(h.Sale, ""))
	}
	sale := repl.ReplaceAll(h.Sale, "")
	if ref, canonical := handler.CheckRequest(r); !canonical {
		// The sale placeholder reads the raw path, the routes matched the cleaned one.
		return h.Endpoints.Refuse(w, endpoint, ref)
	}
	if !contract.ValidID(sale) {
		return h.Endpoints.Refuse(w, endpoint, handler.BadRequest)
	}
	ctx := r.Context()
	if endpoint == "challenge" {
		return h.serveChallenge(ctx, w, r, repl, sale)
	}
	switch r.Method {
	case http.MethodPost:
		return h.enter(ctx, w, r, repl, sale)
	case http.MethodDelete:
		return h.withdraw(ctx, w, repl, sale)
	case http.MethodGet, http.MethodHead:
		if handler.WantsHTML(r) {
			return h.servePage(ctx, w, r, sale)
		}
		return h.status(ctx, w, repl, sale)
	default:
		return h.Endpoints.MethodNotAllowed(w, "draw", "GET, POST, DELETE")
	}
}

// sharedChallenge answers GET /seckill/{sale}/challenge for a draw sale and passes any other
// request of that path to the next handler: the waiting room answers for its sales (and
// refuses the rest), as it did before draws existed.
func (h *Draw) sharedChallenge(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, repl *caddy.Replacer, sale string) error {
	if _, canonical := handler.CheckPath(r); !canonical || !contract.ValidID(sale) {
		return next.ServeHTTP(w, r)
	}
	c, err := h.mem.Sale(r.Context(), sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "challenge", err)
	}
	if !c.Draw {
		return next.ServeHTTP(w, r)
	}
	return h.serveChallenge(r.Context(), w, r, repl, sale)
}

// Codes of the draw (DESIGN.md, "Draws"), and not_entered, which this handler adds: GET or
// DELETE /draw by a user who never entered.
const (
	CodeNotOpen    = "not_open"
	CodeClosed     = "closed"
	CodeNotEntered = "not_entered"
)

// The draw's refusals (the shared ones are in package refusal).
var (
	noDraw     = handler.Refusal{Status: http.StatusNotFound, Code: contract.CodeUnknownSale, Message: "no draw for this sale"}
	notOpen    = handler.Refusal{Status: http.StatusForbidden, Code: CodeNotOpen, Message: "the draw does not take entries yet"}
	closed     = handler.Refusal{Status: http.StatusForbidden, Code: CodeClosed, Message: "the draw's entries are closed"}
	notEntered = handler.Refusal{Status: http.StatusNotFound, Code: CodeNotEntered, Message: "you have not entered this draw"}
	badVariant = handler.Refusal{Status: http.StatusBadRequest, Code: contract.CodeBadRequest,
		Message: "no such variant in this sale (a sale with several variants needs one named)"}
	badBody = handler.Refusal{Status: http.StatusBadRequest, Code: contract.CodeBadRequest,
		Message: `the body must be one JSON object {"variant":"<id>"}`}
)

// Interface guards
var (
	_ caddy.Provisioner           = (*Draw)(nil)
	_ caddy.Validator             = (*Draw)(nil)
	_ caddyhttp.MiddlewareHandler = (*Draw)(nil)
)
