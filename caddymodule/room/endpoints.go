package room

import (
	"context"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/contract"
)

// roomRoutes are the room's endpoints, by the path's end.
var roomRoutes = handler.NewRoutes(
	handler.Route{Suffix: "/room/prequeue", Endpoint: "prequeue"},
	handler.Route{Suffix: "/room", Endpoint: "room"},
	handler.Route{Suffix: "/challenge", Endpoint: "challenge"},
	handler.Route{Suffix: "/queue", Endpoint: "queue"},
)

// ServeHTTP routes the room's endpoints by the path's end (roomRoutes), the queue's by the method.
// Refusals go through the shared refusal writer: the contract's JSON body, or a caddyhttp error with handle_errors.
// Standing in a dispatched route (handler.Dispatch), it passes every other request to next.
func (h *Room) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.Passes(r) {
		return next.ServeHTTP(w, r)
	}
	repl := handler.Replacer(r)
	sale := h.SaleOf(r, repl)
	endpoint, ok := roomRoutes.Match(r.URL.Path)
	if !ok {
		return h.Endpoints.Refuse(w, "unknown", noEndpoint)
	}
	if ref, canonical := handler.CheckRequest(r); !canonical {
		// The sale placeholder reads the raw path, the routes matched the cleaned one.
		return h.Endpoints.Refuse(w, endpoint, ref)
	}
	if endpoint == "challenge" && !handler.SameOrigin(r) {
		// A GET, but not a harmless one: it spends the user's open-challenge allowance, so
		// another site must not make his browser fetch challenges and keep him from entering.
		return h.Endpoints.Refuse(w, endpoint, handler.CrossSite)
	}
	if !contract.ValidID(sale) {
		return h.Endpoints.Refuse(w, endpoint, handler.BadRequest)
	}
	// Each Redis call of the request is bounded by the handler's caller (timeout and
	// max_pending): see core.BoundStore.
	ctx := r.Context()
	switch endpoint {
	case "room":
		return h.serveRoom(ctx, w, r, sale)
	case "prequeue":
		return h.servePrequeue(ctx, w, r, sale)
	case "challenge":
		return h.serveChallenge(ctx, w, r, repl, sale)
	}
	switch r.Method {
	case http.MethodPost:
		return h.enter(ctx, w, r, repl, sale)
	case http.MethodGet:
		if r.Header.Get(sealed.HeaderTicket) == "" && handler.WantsHTML(r) {
			_ = h.ServePage(w, r, sale, nil)
			return nil
		}
		return h.poll(ctx, w, r, repl, sale)
	case http.MethodDelete:
		return h.leave(ctx, w, r, repl, sale)
	default:
		return h.Endpoints.MethodNotAllowed(w, "queue", "GET, POST, DELETE")
	}
}

// Paths is what the room answers in a dispatched route: the paths of roomRoutes under
// {prefix}/{sale}/, any method.
func (h *Room) Paths() (string, []handler.SharedPath) {
	return h.Prefix, []handler.SharedPath{{Rest: "room/prequeue"}, {Rest: "room"}, {Rest: "challenge"}, {Rest: "queue"}}
}

// RoomInfo is the body of GET /seckill/{sale}/room.
type RoomInfo struct {
	Sale           string `json:"sale"`
	State          string `json:"state"`
	StartsAt       string `json:"starts_at"`
	PrequeueFrom   string `json:"prequeue_from"`
	SeedCommitment string `json:"seed_commitment"`
	Seed           string `json:"seed,omitempty"`
	UnitsLeft      int64  `json:"units_left"`
}

func (h *Room) serveRoom(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return h.Endpoints.MethodNotAllowed(w, "room", "GET")
	}
	c, ok, err := h.mem.Room(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "room", err)
	}
	if !ok {
		return h.Endpoints.Refuse(w, "room", noRoom)
	}
	p, err := h.mem.Store.Public(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "room", err)
	}
	info := RoomInfo{
		Sale: sale, State: core.PublicState(c.Room, p),
		StartsAt:       c.Room.Starts.UTC().Format(time.RFC3339Nano),
		PrequeueFrom:   c.Room.Starts.Add(-c.Room.Prequeue).UTC().Format(time.RFC3339Nano),
		SeedCommitment: c.Room.Commitment,
		UnitsLeft:      max(p.Stock, 0),
	}
	if !p.Now.Before(c.Room.Ends) {
		info.Seed = hex.EncodeToString(c.Room.Seed)
	}
	return h.Endpoints.Answer(w, "room", info.State, http.StatusOK, info)
}

// serveChallenge answers GET /challenge at the room's difficulty in force now.
func (h *Room) serveChallenge(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	return h.ServeChallenge(ctx, w, r, repl, sale, func(ctx context.Context) (int, int, handler.Refusal, error) {
		c, ok, err := h.mem.Room(ctx, sale)
		if err != nil || !ok {
			return 0, 0, noRoom, err
		}
		d := sealed.Difficulty(c.Room.DifficultyMin, c.Room.DifficultyMax, c.Rate.Get(h.mem.Now()), h.DifficultyRate)
		return d, c.Room.DifficultyMax, handler.Refusal{}, nil
	})
}

func (h *Room) enter(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.UserOf(r, repl)
	if !ok {
		return h.Endpoints.Refuse(w, "enter", ref)
	}
	c, ok, err := h.mem.Room(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "enter", err)
	}
	if !ok {
		return h.Endpoints.Refuse(w, "enter", noRoom)
	}
	jkt, bref, ok := entryBinding(&h.Settings, r, h.mem.Now())
	if !ok {
		return h.Endpoints.Refuse(w, "enter", bref)
	}
	flag, answered, err := h.CheckEntry(ctx, w, r, "enter", sale)
	if answered {
		return err
	}
	if flag == "" && len(h.BanZones) > 0 {
		flag = bannedFlag(ctx, h.mem.Store, h.BanZones, h.Logger, user, jkt)
	}
	now := h.mem.Now()
	told := h.mem.ToldFor(c, -1, now)
	v := h.mem.Visiting(c, told, now)
	v.Enter = true
	if c.Room.PowRequired() {
		ch, err := h.mem.Sealer.VerifyChallenge(r.Header.Get(sealed.HeaderChallenge), r.Header.Get(sealed.HeaderSolution), sale, user, c.Room.DifficultyMin, now)
		if err != nil {
			kitMetrics.Challenges.WithLabelValues("refused").Inc()
			return h.Endpoints.Refuse(w, "enter", sealed.RefusalOf(err))
		}
		v.Nonce, v.NonceExp = ch.Nonce, ch.Expires
		// A live challenge is enough at the difficulty it was sealed with, whatever the rate
		// did since (honest work is never thrown away; its short life, the bounds of
		// the issue step and the difficulty in force at the issue stop a stockpile). So no
		// bound on the entry rate: room_queue.lua's too_easy check stays off.
		v.MaxRate = -1
	}
	place := core.PlaceOf(c.Room.EntryKey, c.Room.Seed, sale, user)
	v.Member = place.Member(user)
	v.JKT = jkt
	if len(c.Room.Lanes) > 0 {
		// The entry's lane: its invitation code, else the verified user's claims, else public.
		code, ok := invitationOf(r)
		if !ok {
			return h.Endpoints.Refuse(w, "enter", badInvitation)
		}
		var claims []string
		if h.LaneClaims != "" {
			claims = core.Claims(repl.ReplaceAll(h.LaneClaims, ""))
		}
		lane, ok := core.LaneOf(c.Room.Lanes, claims, code)
		if !ok {
			return h.Endpoints.Refuse(w, "enter", unknownInvitation)
		}
		v.Lane = lane.Name
		if code != "" {
			v.CodeHash = core.CodeHash(code)
		}
	}
	v.Flag = flag != ""
	rep, err := h.mem.Store.Visit(ctx, sale, v)
	if err != nil {
		return h.Endpoints.Unavailable(w, "enter", err)
	}
	if rep.Outcome == core.KeyMismatch && jkt == "" {
		// A place bound to a device key, entered again without a proof (device_binding
		// optional): the client can sign with its key.
		ref, _ := dpop.Refusal(dpop.ErrMissing)
		return h.Endpoints.Refuse(w, "enter", ref)
	}
	c.Rate.Observe(rep.EntryRate, now)
	h.mem.PassOnBanned(ctx, sale, c, rep)
	if v.Nonce != "" {
		if rep.Outcome == core.Replayed {
			kitMetrics.Challenges.WithLabelValues("refused").Inc()
		} else {
			kitMetrics.Challenges.WithLabelValues("solved").Inc()
		}
	}
	verdict := core.Decide(rep, true, c.PaceOf(rep), h.mem.Refresh)
	h.mem.CapRefresh(&verdict, told)
	if verdict.Status == http.StatusOK {
		entries.Inc()
		if flag != "" {
			flagged.WithLabelValues(sale, flag).Inc()
		}
		verdict.Answer.Ticket = h.mem.PlacedTicket(sale, user, jkt, c, rep)
		if verdict.Answer.Ticket == "" {
			verdict.Answer.Ticket = h.mem.Sealer.TicketFor(sale, user, jkt, c.Room.Ends.Add(core.TicketGrace))
		}
		verdict.Answer.Ticket = h.mem.Sealer.BindTicket(verdict.Answer.Ticket, sale, user, jkt)
		verdict.Answer.EntryID = place.EntryID
	}
	return h.finish(w, "enter", sale, rep, verdict)
}

// bannedFlag is roomkit.FlagBan when a ban zone bans the user or his device key (jkt) now:
// the entrant is flagged. A failure to read the bans flags nobody (logged).
func bannedFlag(ctx context.Context, store core.Store, zones []string, logger *zap.Logger, user, jkt string) string {
	who := []string{user}
	if jkt != "" {
		who = append(who, jkt)
	}
	banned, err := store.Banned(ctx, zones, who)
	if err != nil {
		logger.Warn("room: reading the throttle's bans at entry failed", zap.String("user", user), zap.Error(err))
		return ""
	}
	if len(banned) > 0 {
		return roomkit.FlagBan
	}
	return ""
}

func (h *Room) poll(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.UserOf(r, repl)
	if !ok {
		return h.Endpoints.Refuse(w, "poll", ref)
	}
	ticket, sealedTo, jkt, bref, ok := presentedTicket(&h.Settings, h.mem.Sealer, r, sale, user, h.mem.Now())
	if !ok {
		return h.Endpoints.Refuse(w, "poll", bref)
	}
	index, err := h.mem.VerifyTicketPlace(ticket, sale, user, sealedTo, h.mem.Now())
	if err != nil {
		return h.Endpoints.Refuse(w, "poll", badTicket)
	}
	if h.events.SoldOut(sale) {
		// Answered from memory: the gate broadcast the sale's last unit.
		return writeJSON(&h.Endpoints, w, "poll", string(core.SoldOut), h.soldOut)
	}
	c, ok, err := h.mem.Room(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "poll", err)
	}
	if !ok {
		return h.Endpoints.Refuse(w, "poll", noRoom)
	}
	if v, rep, ok := h.mem.FromMemory(ctx, sale, user, c, index); ok {
		return h.finish(w, "poll", sale, rep, v)
	}
	gen := h.events.Generation(sale)
	place := core.PlaceOf(c.Room.EntryKey, c.Room.Seed, sale, user)
	told := h.mem.ToldFor(c, index, h.mem.Now())
	visit := h.mem.Visiting(c, told, h.mem.Now())
	visit.Member = place.Member(user)
	rep, err := h.mem.Store.Visit(ctx, sale, visit)
	if err != nil {
		return h.Endpoints.Unavailable(w, "poll", err)
	}
	if rep.Outcome == core.SoldOut {
		h.events.MarkSoldOut(sale, gen)
	}
	h.mem.PassOnBanned(ctx, sale, c, rep)
	v := core.Decide(rep, false, c.PaceOf(rep), h.mem.Refresh)
	h.mem.CapRefresh(&v, told)
	if index < 0 {
		if t := h.mem.PlacedTicket(sale, user, jkt, c, rep); t != "" {
			v.Answer.Ticket = h.mem.Sealer.BindTicket(t, sale, user, jkt)
		}
	}
	return h.finish(w, "poll", sale, rep, v)
}

// leave gives the ticket's place up (DELETE /queue): 200 {"state":"left"}, also when the user
// holds no place any more, so a retried DELETE answers the same.
func (h *Room) leave(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.UserOf(r, repl)
	if !ok {
		return h.Endpoints.Refuse(w, "leave", ref)
	}
	ticket, sealedTo, _, bref, ok := presentedTicket(&h.Settings, h.mem.Sealer, r, sale, user, h.mem.Now())
	if !ok {
		return h.Endpoints.Refuse(w, "leave", bref)
	}
	if _, err := h.mem.Sealer.VerifyTicketPlaceFor(ticket, sale, user, sealedTo, h.mem.Now()); err != nil {
		return h.Endpoints.Refuse(w, "leave", badTicket)
	}
	c, ok, err := h.mem.Room(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "leave", err)
	}
	if !ok {
		return h.Endpoints.Refuse(w, "leave", noRoom)
	}
	place := core.PlaceOf(c.Room.EntryKey, c.Room.Seed, sale, user)
	rep, err := h.mem.Store.Visit(ctx, sale, core.Visit{Leave: true, Member: place.Member(user), Settings: c.Room.Settings})
	if err != nil {
		return h.Endpoints.Unavailable(w, "leave", err)
	}
	if rep.Outcome == core.Left {
		leaves.Inc()
	}
	return h.finish(w, "leave", sale, rep, core.Decide(rep, false, c.PaceOf(rep), h.mem.Refresh))
}

func (h *Room) finish(w http.ResponseWriter, endpoint, sale string, rep core.Reply, v core.Verdict) error {
	admissions.Add(float64(rep.AdmittedNow))
	lapsed.Add(float64(rep.LapsedNow))
	if rep.Outcome != core.UnknownSale && rep.Outcome != core.NoRoom {
		depth.WithLabelValues(sale).Set(float64(rep.Depth))
	}
	if v.Status != http.StatusOK {
		return h.Endpoints.Refuse(w, endpoint, handler.Refusal{Status: v.Status, Code: v.Code, Message: v.Message})
	}
	if v.Answer.State == string(core.Waiting) {
		wait.Observe(float64(v.Answer.EstimatedWaitS))
	}
	if v.Answer.State == string(core.Paused) {
		w.Header().Set("Retry-After", strconv.FormatInt(handler.Seconds(time.Duration(h.RetryAfter)), 10))
	}
	if b := h.stable.of(&v.Answer); b != nil {
		return writeJSON(&h.Endpoints, w, endpoint, v.Answer.State, b)
	}
	return writeAnswer(&h.Endpoints, w, endpoint, v.Answer.State, &v.Answer)
}
