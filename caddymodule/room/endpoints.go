package room

import (
	"context"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// ticketGrace keeps a ticket valid a while after the end, so a waiter learns `ended`.
const ticketGrace = time.Hour

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
		return h.methodNotAllowed(w, "room", "GET")
	}
	c, ok, err := h.roomOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "room", err)
	}
	if !ok {
		return h.refuse(w, "room", noRoom)
	}
	p, err := h.store.Public(ctx, sale)
	if err != nil {
		return h.unavailable(w, "room", err)
	}
	info := RoomInfo{
		Sale: sale, State: core.PublicState(c.room, p),
		StartsAt:       c.room.Starts.UTC().Format(time.RFC3339Nano),
		PrequeueFrom:   c.room.Starts.Add(-c.room.Prequeue).UTC().Format(time.RFC3339Nano),
		SeedCommitment: c.room.Commitment,
		UnitsLeft:      max(p.Stock, 0),
	}
	if !p.Now.Before(c.room.Ends) {
		info.Seed = hex.EncodeToString(c.room.Seed)
	}
	return h.answer(w, "room", info.State, http.StatusOK, info)
}

// ChallengeAnswer is the body of GET /seckill/{sale}/challenge.
type ChallengeAnswer = sealed.ChallengeAnswer

func (h *Room) serveChallenge(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	if r.Method != http.MethodGet {
		return h.methodNotAllowed(w, "challenge", "GET")
	}
	user, ref, ok := h.user(repl)
	if !ok {
		return h.refuse(w, "challenge", ref)
	}
	c, ok, err := h.roomOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "challenge", err)
	}
	if !ok {
		return h.refuse(w, "challenge", noRoom)
	}
	// The difficulty in force now: the challenge keeps it for its whole (short) life.
	d := sealed.Difficulty(c.room.DifficultyMin, c.room.DifficultyMax, c.rate.Get(h.now()), h.DifficultyRate)
	a, ref, err := h.Issue(ctx, h.caller, h.issuer, r, sale, user, d, c.room.DifficultyMax)
	if err != nil {
		return h.unavailable(w, "challenge", err)
	}
	if ref.Status != 0 {
		challenges.WithLabelValues("bounded").Inc()
		return h.refuse(w, "challenge", ref)
	}
	challenges.WithLabelValues("issued").Inc()
	return h.answer(w, "challenge", "issued", http.StatusOK, a)
}

func (h *Room) serveQueue(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	switch r.Method {
	case http.MethodPost:
		return h.enter(ctx, w, r, repl, sale)
	case http.MethodGet:
		if r.Header.Get(sealed.HeaderTicket) == "" && handler.WantsHTML(r) {
			h.servePage(w, r, sale)
			return nil
		}
		return h.poll(ctx, w, r, repl, sale)
	case http.MethodDelete:
		return h.leave(ctx, w, r, repl, sale)
	default:
		return h.methodNotAllowed(w, "queue", "GET, POST, DELETE")
	}
}

func (h *Room) enter(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.user(repl)
	if !ok {
		return h.refuse(w, "enter", ref)
	}
	c, ok, err := h.roomOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "enter", err)
	}
	if !ok {
		return h.refuse(w, "enter", noRoom)
	}
	jkt, bref, ok := h.entryBinding(r)
	if !ok {
		return h.refuse(w, "enter", bref)
	}
	now := h.now()
	told := h.toldFor(c, -1, now)
	v := core.Visit{Enter: true, Settings: c.room.Settings, Admit: c.view.ClaimAdmission(now, time.Duration(h.AdmitInterval)),
		Presence: h.presenceAt(c, told, now)}
	if c.room.PowRequired() {
		ch, err := h.sealer.VerifyChallenge(r.Header.Get(sealed.HeaderChallenge), r.Header.Get(sealed.HeaderSolution), sale, user, c.room.DifficultyMin, now)
		if err != nil {
			challenges.WithLabelValues("refused").Inc()
			return h.refuse(w, "enter", sealed.RefusalOf(err))
		}
		v.Nonce, v.NonceExp = ch.Nonce, ch.Expires
		// A live challenge is enough at the difficulty it was sealed with, whatever the rate
		// did since (honest work is never thrown away; its short life, the bounds of
		// the issue step and the difficulty in force at the issue stop a stockpile). So no
		// bound on the entry rate: room_queue.lua's too_easy check stays off.
		v.MaxRate = -1
	}
	place := core.PlaceOf(c.room.EntryKey, c.room.Seed, sale, user)
	v.Member = place.Member(user)
	v.JKT = jkt
	rep, err := h.store.Visit(ctx, sale, v)
	if err != nil {
		return h.unavailable(w, "enter", err)
	}
	if rep.Outcome == core.KeyMismatch && jkt == "" {
		// A place bound to a device key, entered again without a proof (device_binding
		// optional): the client can sign with its key.
		ref, _ := dpop.Refusal(dpop.ErrMissing)
		return h.refuse(w, "enter", ref)
	}
	c.rate.Observe(rep.EntryRate, now)
	h.passOnBanned(ctx, sale, c, rep)
	if v.Nonce != "" {
		if rep.Outcome == core.Replayed {
			challenges.WithLabelValues("refused").Inc()
		} else {
			challenges.WithLabelValues("solved").Inc()
		}
	}
	verdict := core.Decide(rep, true, c.paceOf(rep), h.refresh)
	h.capRefresh(&verdict, told)
	if verdict.Status == http.StatusOK {
		entries.Inc()
		verdict.Answer.Ticket = h.placedTicket(sale, user, jkt, c, rep)
		if verdict.Answer.Ticket == "" {
			verdict.Answer.Ticket = h.sealer.TicketFor(sale, user, jkt, c.room.Ends.Add(ticketGrace))
		}
		verdict.Answer.Ticket = h.sealer.BindTicket(verdict.Answer.Ticket, sale, user, jkt)
		verdict.Answer.EntryID = place.EntryID
	}
	return h.finish(w, "enter", sale, rep, verdict)
}

func (h *Room) poll(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.user(repl)
	if !ok {
		return h.refuse(w, "poll", ref)
	}
	ticket, sealedTo, jkt, bref, ok := h.presentedTicket(r, sale, user)
	if !ok {
		return h.refuse(w, "poll", bref)
	}
	index, err := h.verifyTicketPlace(ticket, sale, user, sealedTo, h.now())
	if err != nil {
		return h.refuse(w, "poll", badTicket)
	}
	if h.events.SoldOut(sale) {
		// Answered from memory: the gate broadcast the sale's last unit.
		return h.writeJSON(w, "poll", string(core.SoldOut), h.soldOut)
	}
	c, ok, err := h.roomOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "poll", err)
	}
	if !ok {
		return h.refuse(w, "poll", noRoom)
	}
	if v, rep, ok := h.fromMemory(ctx, sale, user, c, index); ok {
		return h.finish(w, "poll", sale, rep, v)
	}
	gen := h.events.Generation(sale)
	place := core.PlaceOf(c.room.EntryKey, c.room.Seed, sale, user)
	told := h.toldFor(c, index, h.now())
	rep, err := h.store.Visit(ctx, sale, core.Visit{Member: place.Member(user), Settings: c.room.Settings,
		Admit: c.view.ClaimAdmission(h.now(), time.Duration(h.AdmitInterval)), Presence: h.presenceAt(c, told, h.now())})
	if err != nil {
		return h.unavailable(w, "poll", err)
	}
	if rep.Outcome == core.SoldOut {
		h.events.MarkSoldOut(sale, gen)
	}
	h.passOnBanned(ctx, sale, c, rep)
	v := core.Decide(rep, false, c.paceOf(rep), h.refresh)
	h.capRefresh(&v, told)
	if index < 0 {
		if t := h.placedTicket(sale, user, jkt, c, rep); t != "" {
			v.Answer.Ticket = h.sealer.BindTicket(t, sale, user, jkt)
		}
	}
	return h.finish(w, "poll", sale, rep, v)
}

// placedTicket is a ticket carrying the place's queue index (r2), for a waiter after the
// start: his later polls far from the front are answered from memory. "" when the order is
// not drawn yet (before the start) or the user is not waiting. The client keeps the newest
// ticket it is given (a poll's answer carries one when it has a better one).
func (h *Room) placedTicket(sale, user, jkt string, c *cachedRoom, rep core.Reply) string {
	if rep.Outcome != core.Waiting || rep.Now.Before(rep.Starts) {
		return ""
	}
	return h.sealer.TicketAtFor(sale, user, jkt, c.room.Ends.Add(ticketGrace), rep.Cursor+rep.Position-1)
}

// leave gives the ticket's place up (DELETE /queue): 200 {"state":"left"}, also when the user
// holds no place any more, so a retried DELETE answers the same.
func (h *Room) leave(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string) error {
	user, ref, ok := h.user(repl)
	if !ok {
		return h.refuse(w, "leave", ref)
	}
	ticket, sealedTo, _, bref, ok := h.presentedTicket(r, sale, user)
	if !ok {
		return h.refuse(w, "leave", bref)
	}
	if _, err := h.sealer.VerifyTicketPlaceFor(ticket, sale, user, sealedTo, h.now()); err != nil {
		return h.refuse(w, "leave", badTicket)
	}
	c, ok, err := h.roomOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "leave", err)
	}
	if !ok {
		return h.refuse(w, "leave", noRoom)
	}
	place := core.PlaceOf(c.room.EntryKey, c.room.Seed, sale, user)
	rep, err := h.store.Visit(ctx, sale, core.Visit{Leave: true, Member: place.Member(user), Settings: c.room.Settings})
	if err != nil {
		return h.unavailable(w, "leave", err)
	}
	if rep.Outcome == core.Left {
		leaves.Inc()
	}
	return h.finish(w, "leave", sale, rep, core.Decide(rep, false, c.paceOf(rep), h.refresh))
}

func (h *Room) finish(w http.ResponseWriter, endpoint, sale string, rep core.Reply, v core.Verdict) error {
	admissions.Add(float64(rep.AdmittedNow))
	lapsed.Add(float64(rep.LapsedNow))
	if rep.Outcome != core.UnknownSale && rep.Outcome != core.NoRoom {
		depth.WithLabelValues(sale).Set(float64(rep.Depth))
	}
	if v.Status != http.StatusOK {
		return h.refuse(w, endpoint, handler.Refusal{Status: v.Status, Code: v.Code, Message: v.Message})
	}
	if v.Answer.State == string(core.Waiting) {
		wait.Observe(float64(v.Answer.EstimatedWaitS))
	}
	if v.Answer.State == string(core.Paused) {
		w.Header().Set("Retry-After", strconv.FormatInt(handler.Seconds(time.Duration(h.RetryAfter)), 10))
	}
	return h.writeAnswer(w, endpoint, v.Answer.State, &v.Answer)
}

func (h *Room) answer(w http.ResponseWriter, endpoint, label string, status int, body any) error {
	return h.ep.Answer(w, endpoint, label, status, body)
}
