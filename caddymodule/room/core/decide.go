package core

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// Codes of the room's refusals (shared DESIGN.md, "Waiting room"), besides the contract's.
const (
	CodeNotAdmitted      = contract.CodeNotAdmitted
	CodeInvalidTicket    = "invalid_ticket"
	CodeInvalidChallenge = "invalid_challenge"
	CodePaused           = "paused"
	// CodeNotEnded refuses the pre-queue list before the sale has ended (docs/room.md).
	CodeNotEnded = "not_ended"
	// CodeQueueFull (503, Retry-After) refuses a new entry when the room holds max_waiters
	// places.
	CodeQueueFull = contract.CodeQueueFull
	// CodeNotWaiting (409) refuses leaving a place the room admitted already.
	CodeNotWaiting = "not_waiting"
)

// SaleRoom is what a gateway knows of a sale's room; it changes only at preheat, so the
// handler caches it for a short while.
type SaleRoom struct {
	Settings
	Seed       []byte // secret until the end
	EntryKey   []byte // secret for ever
	Commitment string // hex SHA-256 of Seed
	Starts     time.Time
	Ends       time.Time
	// EntryRate is the entry rate across gateways as room_queue.lua counted it when the room
	// was read (entries per second).
	EntryRate int64
}

// Outcome is room_queue.lua's verdict.
type Outcome string

// Outcomes of room_queue.lua.
const (
	Waiting    Outcome = "waiting"
	Admitted   Outcome = "admitted"
	SoldOut    Outcome = "sold_out"
	Ended      Outcome = "ended"
	Paused     Outcome = "paused"
	Lapsed     Outcome = "lapsed"
	Used       Outcome = "used"
	NotEntered Outcome = "not_entered"
	NotStarted Outcome = "not_started"
	Replayed   Outcome = "replayed"
	TooEasy    Outcome = "too_easy"
	QueueFull  Outcome = "queue_full"
	Left       Outcome = "left"
	NotWaiting Outcome = "not_waiting"
	// KeyMismatch (enter): the user's place is bound to another device key than the
	// entry's proof (Visit.JKT), or the entry has no proof.
	KeyMismatch Outcome = "key_mismatch"
	// Revoked is the answer of a revoke (Visit.Revoke).
	Revoked Outcome = "revoked"
	// Outcomes of a tick: the room before the start (its pre-queue) / after it.
	BeforeStart Outcome = "prequeue"
	Open        Outcome = "open"
	UnknownSale Outcome = "unknown_sale"
	NoRoom      Outcome = "no_room"
	// Outcomes of an entry into the invitation lane (lanes.go): a code the room never issued,
	// and one whose uses are spent.
	InvitationUnknown   Outcome = "invitation_unknown"
	InvitationExhausted Outcome = "invitation_exhausted"
)

// Visit is one call of room_queue.lua: a poll, unless Enter or Leave.
type Visit struct {
	Enter bool
	Leave bool // give the place up (DELETE /queue)
	// Tick is a gateway's periodic look at the room (admit, then the summary); Present are
	// the users it answered from memory since its last tick, each with how long he counts as
	// present from the tick.
	Tick    bool
	Present []Seen
	// Decided, on a tick of a room without lanes: how many of the room's admission decisions
	// the gateway has read (Decisions.Count of its last tick, 0 for none); the tick returns
	// the ones since (Reply.Decisions). Negative: the tick reads none.
	Decided int64
	// Admit runs the admission step (lapses, new admissions): a gateway asks for it at most
	// once per sale per admit_interval (View.ClaimAdmission), not on every poll.
	Admit bool
	// AdmitLease, with Admit: the step runs only when no step ran for the sale, on any
	// gateway, within it (the room hash's last_ms, Redis time), so a sale runs at most one step
	// per admit_interval across gateways. 0: the step runs.
	AdmitLease time.Duration
	// Presence is how long this visit's user counts as present from now (the refresh_s he is
	// told plus a grace, or the presence_window): the admission step admits only waiters
	// present when it runs, and passes (and keeps) the places of the others. 0: no presence
	// rule, everyone in turn. On a tick any positive value turns the rule on.
	Presence time.Duration
	Member   string
	// Revoke ends the live admissions of users the throttle bans: nothing else is
	// done in the call.
	Revoke   []Ban
	Nonce    string // enter with proof of work: the nonce to spend
	NonceExp time.Time
	// MaxRate is the highest entry rate at which the proof's difficulty is still the one in
	// force (MaxEntryRate); -1: any rate.
	MaxRate int64
	// JKT is the thumbprint of the entry's DPoP proof key ("" for none): the first bound
	// entry binds the place to it, and a later entry with another key (or none) is refused
	// KeyMismatch.
	JKT string
	// Lane (enter, a room with lanes): the lane the gateway placed the entry in (LaneOf);
	// CodeHash the SHA-256 of its invitation code (CodeHash), for the invitation lane.
	Lane, CodeHash string
	// Flag (enter): the entrant is flagged (a bot challenge's verdict, a throttle ban, a rule
	// on the request): he gets his place and his answers like anyone, and is never admitted
	// (docs/room.md, "The queue bots never leave").
	Flag     bool
	Settings Settings
}

// Ban is a user the throttle bans, until Until, with his queue member.
type Ban struct {
	User, Member string
	Until        time.Time
}

// Seen is a user answered from a gateway's memory, present for For from the next tick.
type Seen struct {
	User string
	For  time.Duration
}

// Reply is room_queue.lua's answer.
type Reply struct {
	Outcome         Outcome
	Position, Ahead int64
	AdmittedUntil   time.Time
	Now             time.Time // Redis TIME
	Stock           int64
	Depth           int64 // places not yet admitted
	Starts          time.Time
	AdmittedNow     int64
	LapsedNow       int64
	EntryRate       int64 // entries per second across gateways; -1 when not read
	Admitted        int64 // the room's admissions so far, across gateways
	Cursor          int64 // places the admission step walked past (admitted or passed while absent)
	// Checks are, when the call ran the admission step, the users it admitted and a few
	// random live admissions: the gateway checks them against the throttle's bans.
	Checks  []string
	Revoked int64 // the admissions a revoke ended
	// Decisions are, on a tick of an open room without lanes that asked for them
	// (Visit.Decided), the admission steps' decisions since the ones the gateway has read.
	Decisions *Decisions
}

// Decisions are the recent admission decisions a tick read (the room's decided list,
// lua/room_queue.lua's KEYS[16]).
type Decisions struct {
	// Count is the room's decisions ever recorded: the next tick's Visit.Decided.
	Count int64
	// Gap: the list no longer held every decision since Visit.Decided (or the count went
	// back): what the gateway remembers of older ones may be out of date.
	Gap bool
	// Waitlist: the backend runs the room's waitlist, whose offers admit and pass places
	// outside the recorded steps.
	Waitlist bool
	// Steps are the decisions, one element per step or revoke, oldest first:
	// "<admitted_until_ms> <kind><user> ...", kind a (admitted), s (passed while absent), f
	// (passed, flagged), x (a live admission ended early).
	Steps []string
}

// Public is what GET /seckill/{sale}/room shows.
type Public struct {
	Stock int64
	State string // meta state ("open", "paused", ...)
	Now   time.Time
}

// Store is the room's Redis, as the decisions see it: one call per request.
type Store interface {
	// Room reads a sale's room; ok is false when the sale has none (or is unknown).
	Room(ctx context.Context, sale string) (r SaleRoom, ok bool, err error)
	// Visit enters or polls (room_queue.lua).
	Visit(ctx context.Context, sale string, v Visit) (Reply, error)
	// Public reads the sale's stock and state.
	Public(ctx context.Context, sale string) (Public, error)
	// Prequeue reads the pre-queue's size and count of its members in admission order from
	// index from (none when count is 0).
	Prequeue(ctx context.Context, sale string, from, count int64) (members []string, total int64, err error)

	// Banned reads the throttle's bans of users in zones (ban_zones): each banned user, until
	// when. Empty zones or users: none, without a call.
	Banned(ctx context.Context, zones, users []string) (map[string]time.Time, error)
}

// Refresh bounds refresh_s.
type Refresh struct {
	Min, Max time.Duration
}

// After is how long a waiter should wait before polling again: a quarter of the estimated
// wait, within [Min, Max], so a deep queue costs few polls and the front polls often.
func (r Refresh) After(wait time.Duration) int64 {
	d := wait / 4
	d = max(d, r.Min)
	d = min(d, r.Max)
	return int64(math.Ceil(d.Seconds()))
}

// EstimatedWait is how long the places ahead take to be admitted at rate.
func EstimatedWait(ahead int64, rate float64) time.Duration {
	if rate <= 0 || ahead <= 0 {
		return 0
	}
	return time.Duration(float64(ahead) / rate * float64(time.Second))
}

// QueueAnswer is the body of POST and GET /seckill/{sale}/queue.
type QueueAnswer struct {
	Ticket         string `json:"ticket,omitempty"`
	EntryID        string `json:"entry_id,omitempty"`
	State          string `json:"state"`
	Position       int64  `json:"position"`
	Ahead          int64  `json:"ahead"`
	EstimatedWaitS int64  `json:"estimated_wait_s"`
	// EstimatedWaitRangeS is [lo, hi] around estimated_wait_s (waiting only): lo at the
	// room's rate, hi at the slowest pace the room has shown or can fall to (docs/room.md).
	EstimatedWaitRangeS []int64 `json:"estimated_wait_range_s,omitempty"`
	RefreshS            int64   `json:"refresh_s"`
	AdmittedUntil       string  `json:"admitted_until,omitempty"`
	// Reason tells an `ended` place why: "lapsed" (admitted, unused) or "used" (bought).
	Reason    string `json:"reason,omitempty"`
	UnitsLeft int64  `json:"units_left"`
}

// Verdict is a decided answer: a 200 with a QueueAnswer, or a refusal.
type Verdict struct {
	Status  int
	Code    string // refusals only
	Message string
	Answer  QueueAnswer
}

// Decide turns a reply of room_queue.lua into the buyer's answer. enter tells POST from GET:
// entering a paused or ended room is refused, polling one is a state. pace makes a waiter's
// estimate.
func Decide(r Reply, enter bool, pace Pace, refresh Refresh) Verdict {
	ok := func(state string) Verdict {
		return Verdict{Status: http.StatusOK, Answer: QueueAnswer{State: state, UnitsLeft: max(r.Stock, 0), RefreshS: refresh.After(0)}}
	}
	refuse := func(status int, code, msg string) Verdict {
		return Verdict{Status: status, Code: code, Message: msg}
	}
	switch r.Outcome {
	case Waiting:
		v := ok(string(Waiting))
		v.Answer.Position, v.Answer.Ahead = r.Position, r.Ahead
		est := pace.Wait(r.Ahead)
		if r.Now.Before(r.Starts) {
			// Before the start the order is not drawn yet: the place is anywhere in the
			// pre-queue (ahead is its size less one), so the wait runs from the start (the
			// first place) to the start plus the whole pre-queue's wait (the last).
			toStart := r.Starts.Sub(r.Now)
			est = Estimate{Lo: toStart, Point: toStart, Hi: toStart + est.Hi}
		}
		lo, point, hi := est.Seconds()
		v.Answer.EstimatedWaitS = point
		v.Answer.EstimatedWaitRangeS = []int64{lo, hi}
		v.Answer.RefreshS = refresh.After(est.Point)
		return v
	case Admitted:
		v := ok(string(Admitted))
		v.Answer.AdmittedUntil = r.AdmittedUntil.UTC().Format(time.RFC3339)
		v.Answer.RefreshS = refresh.After(r.AdmittedUntil.Sub(r.Now))
		return v
	case SoldOut:
		return ok(string(SoldOut))
	case Ended:
		if enter {
			return refuse(http.StatusForbidden, contract.CodeEnded, "the sale has ended")
		}
		return ok(string(Ended))
	case Lapsed, Used:
		v := ok(string(Ended))
		v.Answer.Reason = string(r.Outcome)
		return v
	case Paused:
		if enter {
			return refuse(http.StatusServiceUnavailable, CodePaused, "the sale is paused")
		}
		return ok(string(Paused))
	case NotEntered:
		return refuse(http.StatusForbidden, CodeInvalidTicket, "this ticket holds no place")
	case NotStarted:
		return refuse(http.StatusForbidden, contract.CodeNotStarted, "the waiting room is not open yet")
	case Replayed:
		return refuse(http.StatusForbidden, CodeInvalidChallenge, "this challenge was used already")
	case TooEasy:
		return refuse(http.StatusForbidden, CodeInvalidChallenge, "the difficulty rose since this challenge was issued; get a new challenge")
	case Left:
		return ok(string(Left))
	case NotWaiting:
		return refuse(http.StatusConflict, CodeNotWaiting, "this place was admitted already; an unused admission lapses by itself")
	case KeyMismatch:
		return refuse(http.StatusForbidden, contract.CodeProofKeyMismatch, "your place in this waiting room is bound to another device's key: enter on that device")
	case QueueFull:
		return refuse(http.StatusServiceUnavailable, CodeQueueFull, "the waiting room is full; try again later")
	case InvitationUnknown:
		return refuse(http.StatusForbidden, contract.CodeInvitationUnknown, "this sale issued no such invitation code")
	case InvitationExhausted:
		return refuse(http.StatusForbidden, contract.CodeInvitationExhausted, "this invitation code has been used as many times as it allows")
	case UnknownSale, NoRoom:
		return refuse(http.StatusNotFound, contract.CodeUnknownSale, "no waiting room for this sale")
	}
	return refuse(http.StatusServiceUnavailable, contract.CodeUnavailable, "unexpected answer")
}

// PublicState is the room's state as GET /seckill/{sale}/room shows it.
func PublicState(r SaleRoom, p Public) string {
	switch {
	case !p.Now.Before(r.Ends):
		return "ended"
	case p.State == "paused":
		return "paused"
	case p.Now.Before(r.Starts.Add(-r.Prequeue)):
		return "not_started"
	case p.Now.Before(r.Starts):
		return "prequeue"
	case p.Stock <= 0:
		return "sold_out"
	}
	return "open"
}
