package core

import (
	"strconv"
	"strings"
	"time"
)

// What a gateway remembers of the admission steps' decisions, so that the poll of a place the
// cursor passed (admitted, passed while absent, passed because flagged) is answered from memory
// too. Each admission step (whichever gateway runs it) records what it decided in the room's
// decided list (lua/room_queue.lua, KEYS[16]); every tick reads the elements since the
// gateway's last one in the same call as the summary's cursor, so every place inside that cursor
// has its decision in memory or older than it. A poll whose place has none (older than the
// memory, a gap in it, a restart) asks Redis, as does one whose answer could differ from
// Redis's now: an admission near its end (lapsed or used is Redis's to tell), one that ended
// early (its buyer's, a ban's: kind x forgets it), a room whose waitlist admits and passes
// outside the steps.

// MaxDecided bounds the decisions a view remembers (users): about 20 s of admissions and passes
// at 200 a second, well past the refresh_s told near the front, where a waiter hears of his
// admission. The oldest go first; their polls ask Redis.
const MaxDecided = 4096

// decidedMargin: an admission is answered from memory only while it has at least this long to
// run by the gateway's reckoning of Redis's time; closer to its end the poll asks Redis, which
// alone knows whether it lapsed or was used.
const decidedMargin = time.Second

// decision is one place's latest decision.
type decision struct {
	until int64  // 'a': admitted until (unix ms)
	seq   uint32 // its order in the memory, for the eviction
	kind  byte   // 'a' admitted, 's' passed while absent, 'f' passed because flagged
}

// decidedUser is one entry of the eviction order.
type decidedUser struct {
	user string
	seq  uint32
}

// decisions is a view's memory of decisions (guarded by the view's mutex).
type decisions struct {
	count    int64 // the room's decisions read so far (Decisions.Count)
	waitlist bool
	users    map[string]decision
	order    []decidedUser // a ring of at most MaxDecided, oldest at next % MaxDecided once full
	next     uint32
}

// apply takes a tick's decisions in: a gap forgets everything first (a decision missed may have
// changed any remembered one).
func (d *decisions) apply(in *Decisions) {
	if in.Gap {
		clear(d.users)
		d.order, d.next = d.order[:0], 0
	}
	d.count, d.waitlist = in.Count, in.Waitlist
	if d.users == nil {
		d.users = make(map[string]decision)
	}
	for _, step := range in.Steps {
		head, rest, _ := strings.Cut(step, " ")
		until, err := strconv.ParseInt(head, 10, 64)
		if err != nil {
			continue
		}
		for rest != "" {
			var tok string
			tok, rest, _ = strings.Cut(rest, " ")
			if len(tok) < 2 {
				continue
			}
			user := tok[1:]
			switch tok[0] {
			case 'a', 's', 'f':
				// A copy: the step's string is not kept for one user's sake.
				d.remember(strings.Clone(user), decision{kind: tok[0], until: until})
			case 'x':
				delete(d.users, user)
			}
		}
	}
}

// remember records a user's decision, evicting the oldest beyond MaxDecided.
func (d *decisions) remember(user string, dec decision) {
	dec.seq = d.next
	if len(d.order) < MaxDecided {
		d.order = append(d.order, decidedUser{user, d.next})
	} else {
		i := d.next % MaxDecided
		if old := d.order[i]; d.users[old.user].seq == old.seq {
			delete(d.users, old.user)
		}
		d.order[i] = decidedUser{user, d.next}
	}
	d.next++
	d.users[user] = dec
}

// fromDecision is the reply room_queue.lua gives the poll of a place the cursor passed, from the
// user's decision and the summary (rep: its outcome Open, its Now Redis's time now as far as the
// gateway can tell); ok false when the poll must ask Redis. gated: this gateway's polls carry
// presence (room_queue.lua answers a passed absent waiter "waiting" first in line only then).
func fromDecision(d decision, rep Reply, gated bool) (Reply, bool) {
	switch d.kind {
	case 'a':
		until := time.UnixMilli(d.until)
		if !rep.Now.Add(decidedMargin).Before(until) {
			return rep, false
		}
		rep.Outcome, rep.AdmittedUntil = Admitted, until
	case 's':
		if !gated {
			return rep, false
		}
		rep.Outcome, rep.Position, rep.Ahead = Waiting, 1, 0
	case 'f':
		rep.Outcome, rep.Position, rep.Ahead = Waiting, 1, 0
	default:
		return rep, false
	}
	return rep, true
}
