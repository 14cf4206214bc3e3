// Package room is the `seckill_room` handler: a waiting room in front of seckill_token, exact
// across every gateway, with its state in Redis under the sale's hash tag. Buyers enter
// (after a proof of work when the room asks for one), poll with a signed ticket, and are
// admitted at the room's rate, never beyond the remaining stock times oversubscribe. Entries
// made before the start are ordered at the start by a keyed permutation whose seed is
// committed at preheat and revealed at the end. docs/room.md has the whole story.
//
// What the gateway knows of a room (its settings, summary and view, the tickets it verified,
// the published pre-queues, the passing on of bans) is core.Gateway, over the Store port, in
// caddymodule/room/core, which links no Caddy; so are the decisions (core.Decide). This
// package is the HTTP glue, its files from the top down: endpoints.go (ServeHTTP and the
// endpoint writers), prequeue.go (the published pre-queue's pages), caddyfile.go, room.go (the
// options, Provision, Validate), metrics.go, answer.go (200 answers and refusals), devbind.go
// (tickets bound to the device) and page.go (the waiting page's template and script).
package room

import (
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpophttp"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

func init() {
	// The room answers its own paths (/seckill/{sale}/room, /challenge, /queue) and is meant
	// for a path matcher of its own, so its place among the other seckill directives does not
	// matter; before respond keeps it ahead of catch-all responses.
	roomkit.Register[Room]("seckill_room", "respond")
}

// Defaults of the optional fields.
const (
	DefaultRate          = 50.0
	DefaultOversubscribe = 1.5
	DefaultSession       = 2 * time.Minute
	DefaultPrequeue      = 15 * time.Minute
	DefaultRefreshMin    = time.Second
	DefaultRefreshMax    = 30 * time.Second
	// DefaultSummaryInterval keeps sold-out, pause and end within a second of every waiter
	// answered from memory.
	DefaultSummaryInterval = 500 * time.Millisecond
	// DefaultAdmitInterval: ten admission steps a second per sale per gateway, whatever the
	// number of polls; admissions come in batches of at most rate / 10.
	DefaultAdmitInterval = 100 * time.Millisecond
	// MaxWaitersLimit bounds max_waiters (here and in a sale's "room"): 10 000 000 places are
	// about 1.5 GB of Redis.
	MaxWaitersLimit = 10_000_000
)

// Room is the `seckill_room` handler. It answers the room's endpoints itself
// (/seckill/{sale}/room, /room/prequeue, /challenge, /queue) and never calls the next handler.
// The settings below are defaults: a sale created with `"room": {...}` overrides them field by
// field.
type Room struct {
	// sale, user, difficulty_rate, the challenges' options, frame_ancestors, page,
	// retry_after, cache_ttl, and the limits (timeout, default 1s per Redis call,
	// max_pending, handle_errors): what the room shares with the draw (roomkit.Kit).
	roomkit.Kit
	// Admissions per second. Default 50.
	Rate float64 `json:"rate,omitempty"`
	// Live admissions per remaining unit (covers no-shows). Default 1.5; at least 1.
	Oversubscribe float64 `json:"oversubscribe,omitempty"`
	// An admission lapses after this long unused, freeing its place. Default 2m.
	Session caddy.Duration `json:"session,omitempty"`
	// Entries are taken from this long before the start (the pre-queue). Default 15m.
	Prequeue *caddy.Duration `json:"prequeue,omitempty"`
	// Proof-of-work difficulty in leading zero bits, [min, max]; [0, 0] (the default) asks for
	// none. The difficulty grows from min by one bit each time the entry rate doubles beyond
	// difficulty_rate.
	Difficulty []int `json:"difficulty,omitempty"`
	// The most places a sale's queue holds (admitted ones included); beyond it a new entry gets
	// 503 queue_full, someone who has a place keeps it. Default 0: 50 per unit of the sale's
	// stock, at least 10 000, at most 2 000 000. A sale's own max_waiters overrides it.
	MaxWaiters int64 `json:"max_waiters,omitempty"`
	// Bounds of refresh_s, the poll interval told to waiters. Defaults 1s and 30s.
	RefreshMin caddy.Duration `json:"refresh_min,omitempty"`
	RefreshMax caddy.Duration `json:"refresh_max,omitempty"`
	// How often, at most, a gateway looks at a sale's room (one Redis call per sale per
	// gateway: it admits and reads the room's counters) to answer waiters far from the front
	// and pre-queue waiters from memory. Default 500ms; at most 1s, so sold-out, pause and end
	// reach every waiter within a second.
	SummaryInterval caddy.Duration `json:"summary_interval,omitempty"`
	// By default (0) every waiter whose place the room's cursor has not reached is answered
	// from the gateway's memory, the front included: only the poll that finds its place
	// inside the cursor (admitted, or passed) asks Redis, about once per waiter. A
	// duration makes waiters within that much of admissions (at the room's
	// rate) from the front ask Redis on every poll, for a shop that wants the front's positions exact (at least summary_interval + 1s).
	FrontWindow caddy.Duration `json:"front_window,omitempty"`
	// How often, at most, a gateway lets a sale's room admit (the admission step of
	// room_queue.lua: lapses, new admissions), whatever the number of polls; the script
	// decides, so admission stays exact across gateways. Default 100ms; at most
	// summary_interval.
	AdmitInterval caddy.Duration `json:"admit_interval,omitempty"`
	// Admission goes to waiters who are there: an absent waiter's place is passed and kept,
	// and he is admitted first when he is seen again. By default (0) each waiter is present
	// until the refresh_s of his last answer plus a grace (2 x summary_interval + 1s), so a
	// waiter told to come back in a second is absent three seconds after he stops, one told
	// 30s only after 32s (no window to tune). A positive presence_window overrides
	// it with one window for everyone (seen within it: present; at least refresh_max +
	// summary_interval + 1s, since a waiter there polls at least every refresh_max). -1:
	// admit everyone in turn, present or not.
	PresenceWindow caddy.Duration `json:"presence_window,omitempty"`
	// The seckill_throttle zones keyed on the room's user id (e.g. "user" for a zone whose key
	// is {http.auth.user.id}). A user one of them bans is not given an admission he cannot
	// use: the gateway that runs an admission step reads these zones' ban keys for the users
	// it admitted and a few random live admissions, and ends the banned ones' admissions at
	// once, passing their capacity on (core.Gateway.PassOnBanned). Default: none (a banned
	// user whose polls the throttle refuses is still passed as absent once his last answer's
	// refresh_s is over).
	BanZones []string `json:"ban_zones,omitempty"`
	// Conversion-aware admission: an admitted waiter who has taken no purchase
	// token claim_window after his presence deadline (by then his poll has told him) is a
	// no-show. His admission stays live until the session ends (he may still buy: the gate's
	// stock guard is the last word), but it no longer holds a unit's capacity, so the next
	// present waiter is admitted now rather than a session later; admissions not judged yet
	// count at the room's observed conversion (docs/room.md, "Admission"). Default (0): 2 x
	// summary_interval + 2s, the tick's lag and a page's token round trip. -1 (Caddyfile
	// off): every live admission holds capacity until it lapses.
	ClaimWindow caddy.Duration `json:"claim_window,omitempty"`
	// The most live admissions per remaining unit, no-shows included, under conversion-aware
	// admission: it bounds how many admitted people can find the stock gone. Default 0: 4 x
	// the sale's oversubscribe; at least oversubscribe.
	OversubscribeMax float64 `json:"oversubscribe_max,omitempty"`
	// LaneClaims is a placeholder holding the verified user's claim values (separated by
	// spaces or commas), e.g. {http.auth.user.lanes} as seckill_identity's (or seckill_jwt's) lane_claim sets it: an
	// entry whose user holds the claim of one of the sale's claim lanes goes to that lane
	// (docs/room.md, "Lanes"). It must come from the verified identity, never from a header
	// the client sends. Default none: claim lanes stay empty.
	LaneClaims string `json:"lane_claims,omitempty"`

	// device_binding (off, optional, required) and proof_max_age: an entry with a DPoP proof
	// gets a ticket bound to the proof's key, polled and left only with fresh proofs of that
	// key; required lets nobody in or poll without one (devbind.go).
	dpophttp.Settings

	// mem is what this gateway knows of the rooms (caddymodule/room/core): their settings,
	// summaries, the tickets it verified, the published pre-queues; the endpoints ask it.
	mem      *core.Gateway
	events   soldOutFlags
	soldOut  []byte         // the sold-out answer, encoded once (answer.go)
	stable   *stableAnswers // made by setDefaults
	defaults core.Settings
}

// soldOutFlags is the part of the app's sale events the room uses: sold-out answered from
// memory on every gateway as soon as the gate broadcasts it.
type soldOutFlags interface {
	SoldOut(sale string) bool
	Generation(sale string) caddymodule.Generation
	MarkSoldOut(sale string, gen caddymodule.Generation)
}

// CaddyModule returns the Caddy module information.
func (Room) CaddyModule() caddy.ModuleInfo {
	return handler.Module[Room]("http.handlers.seckill_room")
}

// Provision sets defaults and takes the app's Redis client, token keys and sale events. No
// network I/O.
func (h *Room) Provision(ctx caddy.Context) error {
	app, err := h.Kit.Provision(ctx, "seckill_room", pageKind, h.setDefaults, roomCollectors...)
	if err != nil {
		return err
	}
	h.mem.Sealer = h.Issuer.Sealer
	h.mem.Store = core.BoundStore{Store: core.RedisStore{Client: app.RedisClient(), Defaults: h.defaults}, Caller: h.Calls}
	h.mem.Logger = h.Logger
	h.events = app.SaleEvents()
	return nil
}

func (h *Room) setDefaults() {
	h.Kit.SetDefaults("room", kitMetrics)
	if h.Rate == 0 {
		h.Rate = DefaultRate
	}
	if h.Oversubscribe == 0 {
		h.Oversubscribe = DefaultOversubscribe
	}
	if h.Session == 0 {
		h.Session = caddy.Duration(DefaultSession)
	}
	if h.Prequeue == nil {
		p := caddy.Duration(DefaultPrequeue)
		h.Prequeue = &p
	}
	if len(h.Difficulty) == 0 {
		h.Difficulty = []int{0, 0}
	}
	if h.RefreshMin == 0 {
		h.RefreshMin = caddy.Duration(DefaultRefreshMin)
	}
	if h.RefreshMax == 0 {
		h.RefreshMax = caddy.Duration(DefaultRefreshMax)
	}
	if h.SummaryInterval == 0 {
		h.SummaryInterval = caddy.Duration(DefaultSummaryInterval)
	}
	if h.AdmitInterval == 0 {
		h.AdmitInterval = caddy.Duration(DefaultAdmitInterval)
	}
	h.defaults = core.Settings{Rate: h.Rate, Oversubscribe: h.Oversubscribe, Session: time.Duration(h.Session), Prequeue: time.Duration(*h.Prequeue),
		MaxWaiters: h.MaxWaiters, ClaimWindow: claimWindow(h), OversubscribeMax: h.OversubscribeMax}
	if len(h.Difficulty) == 2 {
		h.defaults.DifficultyMin, h.defaults.DifficultyMax = h.Difficulty[0], h.Difficulty[1]
	}
	refresh := core.Refresh{Min: time.Duration(h.RefreshMin), Max: time.Duration(h.RefreshMax)}
	h.mem = core.NewGateway(core.Timing{CacheTTL: time.Duration(h.CacheTTL), SummaryInterval: time.Duration(h.SummaryInterval),
		AdmitInterval: time.Duration(h.AdmitInterval), FrontWindow: time.Duration(h.FrontWindow), PresenceWindow: time.Duration(h.PresenceWindow),
		Refresh: refresh, BanZones: h.BanZones}, gatewayCounts)
	h.soldOut = core.AppendAnswer(nil, &core.QueueAnswer{State: string(core.SoldOut), RefreshS: refresh.After(0)})
	h.stable = new(stableAnswers)
}

// claimWindow is how long past his presence deadline an admitted waiter may take before his
// token (0: off): by that deadline he has polled, and his answer says admitted at most two
// summary intervals later (one to age the summary, one for a tick in flight); two seconds
// more for the page's token round trip on a slow phone.
func claimWindow(h *Room) time.Duration {
	switch {
	case h.ClaimWindow < 0:
		return 0
	case h.ClaimWindow > 0:
		return time.Duration(h.ClaimWindow)
	}
	return 2*time.Duration(h.SummaryInterval) + 2*time.Second
}

// Validate checks the configuration.
func (h *Room) Validate() error {
	switch {
	case h.Rate <= 0:
		return fmt.Errorf("seckill_room: rate must be positive")
	case h.Oversubscribe < 1:
		return fmt.Errorf("seckill_room: oversubscribe must be at least 1")
	case time.Duration(h.Session) < time.Second:
		return fmt.Errorf("seckill_room: session must be at least 1s")
	case *h.Prequeue < 0:
		return fmt.Errorf("seckill_room: prequeue must not be negative")
	case h.Settings.Validate() != nil:
		return fmt.Errorf("seckill_room: %w", h.Settings.Validate())
	case len(h.Difficulty) != 2 || h.Difficulty[0] < 0 || h.Difficulty[1] < h.Difficulty[0] || h.Difficulty[1] > sealed.MaxDifficulty:
		return fmt.Errorf("seckill_room: difficulty is [min, max] with 0 <= min <= max <= %d", sealed.MaxDifficulty)
	case h.RefreshMin <= 0 || h.RefreshMax < h.RefreshMin:
		return fmt.Errorf("seckill_room: need 0 < refresh_min <= refresh_max")
	case h.SummaryInterval < 0 || time.Duration(h.SummaryInterval) > time.Second:
		return fmt.Errorf("seckill_room: summary_interval must be at most 1s")
	case h.AdmitInterval < 0 || h.AdmitInterval > h.SummaryInterval:
		return fmt.Errorf("seckill_room: admit_interval must be at most summary_interval")
	case h.PresenceWindow > 0 && time.Duration(h.PresenceWindow) < time.Duration(h.RefreshMax+h.SummaryInterval)+time.Second:
		return fmt.Errorf("seckill_room: presence_window must be at least refresh_max + summary_interval + 1s (or -1: none)")
	case h.FrontWindow != 0 && time.Duration(h.FrontWindow) < time.Duration(h.SummaryInterval)+time.Second:
		return fmt.Errorf("seckill_room: front_window must be at least summary_interval + 1s")
	case h.ClaimWindow < -1:
		return fmt.Errorf("seckill_room: claim_window must be positive (or -1: off)")
	case h.OversubscribeMax != 0 && h.OversubscribeMax < h.Oversubscribe:
		return fmt.Errorf("seckill_room: oversubscribe_max must be at least oversubscribe")
	case h.MaxWaiters < 0 || h.MaxWaiters > MaxWaitersLimit:
		return fmt.Errorf("seckill_room: max_waiters must be between 1 and %d (0: the built-in default)", MaxWaitersLimit)
	}
	for _, z := range h.BanZones {
		if z == "" || strings.ContainsAny(z, "{}") {
			return fmt.Errorf("seckill_room: ban_zones: %q is not a zone name", z)
		}
	}
	return h.Kit.Validate("seckill_room")
}
