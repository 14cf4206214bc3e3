// Package draw is the `seckill_draw` handler: the edge of a sale in draw mode (DESIGN.md,
// "Draws"; docs/draw.md). It takes entries, changes of size and withdrawals in the draw's window
// with one atomic script call each (lua/draw_enter.lua), answers an entrant where his entry
// stands (lua/draw_status.lua), serves the entry page, and issues the proof-of-work challenges
// of draw sales as the waiting room does (caddymodule/sealed). The draw itself, its
// result, the entries and the proofs are the backend's.
package draw

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/draw/core"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/contract"
)

func init() {
	// On /seckill/{sale}/challenge the draw answers for draw sales and hands the rest to the
	// next handler, the waiting room's, so in a handle that holds both it must come first.
	// seckill_room sits just before respond; the order takes only standard directives as
	// anchors, and copy_response is the last one before respond (it exists only inside
	// reverse_proxy's handle_response, where neither handler goes). The shipped Caddyfiles
	// write both inside a route all the same, which keeps the order as written.
	roomkit.Register[Draw]("seckill_draw", "copy_response")
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
	app, err := h.Kit.Provision(ctx, "seckill_draw", pageKind, h.setDefaults, flagged)
	if err != nil {
		return err
	}
	h.mem.Store = core.RedisStore{Client: app.RedisClient(), Caller: h.Calls}
	return nil
}

func (h *Draw) setDefaults() {
	h.Kit.SetDefaults("draw", kitMetrics)
	h.mem = &core.Gateway{CacheTTL: time.Duration(h.CacheTTL), DifficultyRate: h.DifficultyRate, Now: time.Now}
}

// Validate checks the configuration: every option of the draw is the kit's.
func (h *Draw) Validate() error {
	return h.Kit.Validate("seckill_draw")
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
