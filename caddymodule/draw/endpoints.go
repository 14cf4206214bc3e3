package draw

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/draw/core"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// MaxBody bounds the entry's body (core.MaxEntryBody).
const MaxBody = core.MaxEntryBody

// EntryBody is the body of POST /seckill/{sale}/draw (core.EntryBody).
type EntryBody = core.EntryBody

// ParseEntry decodes an entry's body strictly and checks the variant's syntax: core.ParseEntry.
func ParseEntry(body []byte) (string, bool) { return core.ParseEntry(body) }

// EntryAnswer is the body of POST /seckill/{sale}/draw.
type EntryAnswer struct {
	EntryID string `json:"entry_id"`
	State   string `json:"state"`
	Variant string `json:"variant"`
}

// WithdrawAnswer is the body of DELETE /seckill/{sale}/draw.
type WithdrawAnswer struct {
	State string `json:"state"`
}

// StatusAnswer is the body of GET /seckill/{sale}/draw. Variants (the sale's variants, sorted)
// is added to DESIGN's fields so that a page can offer the sizes.
type StatusAnswer struct {
	EntryID    string   `json:"entry_id"`
	State      string   `json:"state"`
	Variant    string   `json:"variant"`
	Rank       int64    `json:"rank,omitempty"`
	Wave       int64    `json:"wave,omitempty"`
	ClaimUntil string   `json:"claim_until,omitempty"`
	Variants   []string `json:"variants"`
}

// drawRoutes are the draw's endpoints, by the path's end: /challenge is the waiting room's
// too (sharedChallenge).
var drawRoutes = handler.NewRoutes(
	handler.Route{Suffix: "/draw/challenge", Endpoint: "challenge"},
	handler.Route{Suffix: "/draw", Endpoint: "draw"},
	handler.Route{Suffix: "/challenge", Endpoint: endpointShared},
)

// Paths is what the draw answers in a dispatched route: the paths of drawRoutes under
// {prefix}/{sale}/, any method (the shared challenge goes on to the room for a sale without a
// draw).
func (h *Draw) Paths() (string, []handler.SharedPath) {
	return h.Prefix, []handler.SharedPath{{Rest: "draw/challenge"}, {Rest: "draw"}, {Rest: "challenge"}}
}

// endpointShared is the route of the path the draw shares with the waiting room.
const endpointShared = "shared_challenge"

// ServeHTTP routes by the path's end (drawRoutes). Refusals go through the shared refusal writer: the
// contract's JSON body, or a caddyhttp error with handle_errors.
// Standing in a dispatched route (handler.Dispatch), it passes every other request to next.
func (h *Draw) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.Passes(r) {
		return next.ServeHTTP(w, r)
	}
	repl := handler.Replacer(r)
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
		return h.sharedChallenge(w, r, next, repl, h.SaleOf(r, repl))
	}
	sale := h.SaleOf(r, repl)
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
		return h.withdraw(ctx, w, r, repl, sale)
	case http.MethodGet, http.MethodHead:
		if handler.WantsHTML(r) {
			return h.servePage(ctx, w, r, sale)
		}
		return h.status(ctx, w, r, repl, sale)
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

// servePage answers the entry page of a draw sale, with the sale's variants for the size
// picker (from the sale's cached settings, cache_ttl); a sale that is not a draw gets the JSON
// refusal, as the API would answer.
func (h *Draw) servePage(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string) error {
	c, err := h.mem.Sale(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "page", err)
	}
	if !c.Draw {
		return h.Endpoints.Refuse(w, "page", noDraw)
	}
	return h.ServePage(w, r, sale, c.Variants)
}

func (h *Draw) enter(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.UserOf(r, repl)
	if !ok {
		return h.Endpoints.Refuse(w, "enter", ref)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return h.Endpoints.Refuse(w, "enter", badBody)
	}
	variant, ok := ParseEntry(body)
	if !ok {
		return h.Endpoints.Refuse(w, "enter", badBody)
	}
	c, err := h.mem.Sale(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "enter", err)
	}
	if !c.Draw {
		return h.Endpoints.Refuse(w, "enter", noDraw)
	}
	flag, answered, err := h.CheckEntry(ctx, w, r, "enter", sale)
	if answered {
		return err
	}
	call := lua.DrawEnterCall{Sale: sale, User: user, Variant: variant, Flag: flag != ""}
	if ch := r.Header.Get(sealed.HeaderChallenge); c.DMin > 0 || ch != "" {
		// A challenge presented to a draw without proof of work is checked and spent all the
		// same: a client that solved one gets what it paid for, not a silent pass. A live one
		// is enough at the difficulty it was sealed with.
		pc, err := h.Issuer.Sealer.VerifyChallenge(ch, r.Header.Get(sealed.HeaderSolution), sale, user, c.DMin, h.mem.Now())
		if err != nil {
			kitMetrics.Challenges.WithLabelValues("refused").Inc()
			return h.Endpoints.Refuse(w, "enter", sealed.RefusalOf(err))
		}
		call.Nonce, call.NonceExp, call.Difficulty = pc.Nonce, pc.Expires, pc.Difficulty
	}
	rep, err := h.mem.Store.Enter(ctx, call)
	if err != nil {
		return h.Endpoints.Unavailable(w, "enter", err)
	}
	if call.Nonce != "" {
		switch rep.Code {
		case 0:
			kitMetrics.Challenges.WithLabelValues("solved").Inc()
		case codeReplayed, codePowRequired:
			kitMetrics.Challenges.WithLabelValues("refused").Inc()
		}
	}
	if rep.Code != 0 {
		return h.Endpoints.Refuse(w, "enter", refusalOf(rep.Code))
	}
	if flag != "" {
		flagged.WithLabelValues(sale, flag).Inc()
	}
	return h.answer(w, "enter", rep.State, EntryAnswer{EntryID: rep.EntryID, State: rep.State, Variant: rep.Variant})
}

func (h *Draw) withdraw(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.UserOf(r, repl)
	if !ok {
		return h.Endpoints.Refuse(w, "withdraw", ref)
	}
	rep, err := h.mem.Store.Enter(ctx, lua.DrawEnterCall{Sale: sale, User: user, Withdraw: true})
	if err != nil {
		return h.Endpoints.Unavailable(w, "withdraw", err)
	}
	if rep.Code != 0 {
		return h.Endpoints.Refuse(w, "withdraw", refusalOf(rep.Code))
	}
	return h.answer(w, "withdraw", rep.State, WithdrawAnswer{State: rep.State})
}

func (h *Draw) status(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.UserOf(r, repl)
	if !ok {
		return h.Endpoints.Refuse(w, "status", ref)
	}
	c, err := h.mem.Sale(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "status", err)
	}
	if !c.Draw {
		return h.Endpoints.Refuse(w, "status", noDraw)
	}
	rep, err := h.mem.Store.Status(ctx, lua.DrawStatusCall{Sale: sale, User: user})
	if err != nil {
		return h.Endpoints.Unavailable(w, "status", err)
	}
	if rep.Code != 0 {
		return h.Endpoints.Refuse(w, "status", refusalOf(rep.Code))
	}
	a := StatusAnswer{EntryID: rep.EntryID, State: rep.State, Variant: rep.Variant, Variants: c.Variants}
	if a.Variants == nil {
		a.Variants = []string{}
	}
	if rep.Pos >= 0 && rep.State != "entered" && rep.State != "withdrawn" {
		a.Rank = rep.Pos + 1
	}
	if rep.Wave > 0 {
		a.Wave = rep.Wave
		a.ClaimUntil = time.UnixMilli(rep.ClaimUntilMS).UTC().Format(time.RFC3339Nano)
	}
	return h.answer(w, "status", rep.State, a)
}

// serveChallenge answers GET /draw/challenge (and /challenge for a draw sale) at the draw's
// difficulty in force now.
func (h *Draw) serveChallenge(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	return h.ServeChallenge(ctx, w, r, repl, sale, func(ctx context.Context) (int, int, handler.Refusal, error) {
		c, err := h.mem.Sale(ctx, sale)
		if err != nil || !c.Draw {
			return 0, 0, noDraw, err
		}
		return h.mem.Difficulty(c), c.DMax, handler.Refusal{}, nil
	})
}

// The refusals of draw_enter.lua and draw_status.lua (their headers).
const (
	codeUnknownSale = 1
	codeNotOpen     = 2
	codeClosed      = 3
	codeBadVariant  = 4
	codeNotEntered  = 5
	codeReplayed    = 6
	codePowRequired = 7
)

func refusalOf(code int64) handler.Refusal {
	switch code {
	case codeUnknownSale:
		return noDraw
	case codeNotOpen:
		return notOpen
	case codeClosed:
		return closed
	case codeBadVariant:
		return badVariant
	case codeNotEntered:
		return notEntered
	case codeReplayed, codePowRequired:
		return sealed.BadProof
	}
	return handler.Unavailable
}

func (h *Draw) answer(w http.ResponseWriter, endpoint, label string, body any) error {
	return h.Endpoints.Answer(w, endpoint, label, http.StatusOK, body)
}
