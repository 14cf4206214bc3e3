package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/seckilledge/seckill/contract"
)

// Lane is one lane of a room (docs/room.md, "Lanes"), as the room hash's field "lanes" keeps
// it.
type Lane struct {
	Name  string
	Kind  string  // claim, invitation or public
	Share float64 // mode share: the lane's part of the admission rate
	Claim string  // kind claim: the claim value that puts a user in the lane
}

// Lane kinds and modes (contract/admin's LaneSpec).
const (
	LaneClaim      = "claim"
	LaneInvitation = "invitation"
	LanePublic     = "public"
	LaneModeShare  = "share"
	LaneModePrio   = "priority"
)

// ParseLanes reads the room hash's "lanes" field: "<mode>,<name>:<kind>:<share>:<claim>,...".
// "" (no lanes) or a malformed field: nil.
func ParseLanes(field string) (mode string, lanes []Lane) {
	if field == "" {
		return "", nil
	}
	parts := strings.Split(field, ",")
	mode = parts[0]
	for _, p := range parts[1:] {
		f := strings.SplitN(p, ":", 4)
		if len(f) != 4 || f[0] == "" {
			return "", nil
		}
		share, _ := strconv.ParseFloat(f[2], 64)
		lanes = append(lanes, Lane{Name: f[0], Kind: f[1], Share: share, Claim: f[3]})
	}
	return mode, lanes
}

// LaneOf is the lane an entry goes to: the invitation lane when the entry carries a code
// (ok false when the room has none: the code is unknown to it), else the first claim lane
// whose claim is among the user's verified claims, else the public lane. A user who holds a
// place keeps its lane whatever he sends (room_queue.lua).
func LaneOf(lanes []Lane, claims []string, code string) (lane Lane, ok bool) {
	var public Lane
	for _, l := range lanes {
		switch l.Kind {
		case LaneInvitation:
			if code != "" {
				return l, true
			}
		case LaneClaim:
			if code == "" && lane.Name == "" {
				for _, c := range claims {
					if c == l.Claim {
						lane = l
						break
					}
				}
			}
		case LanePublic:
			public = l
		}
	}
	if code != "" {
		return Lane{}, false
	}
	if lane.Name != "" {
		return lane, true
	}
	return public, true
}

// CodeHash is the codes hash's field of an invitation code: hex SHA-256 of its text.
func CodeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// Claims splits a lane_claims placeholder's value into claim values (spaces or commas).
func Claims(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' })
}

// Apportioned is one admission step's split across the lanes: Own[i] is lane i's part of
// its own share (or, in mode priority, what it takes in turn), Extra[i] what it takes of the
// parts other lanes could not use.
type Apportioned struct {
	Own, Extra []int64
}

// ApportionLanes splits an admission step's budget across the lanes, as room_queue.lua does
// (the two are kept the same; the tests of this file pin the rule). credit is each lane's
// credit from the room hash (lane:<name>:credit), updated in place with this step's share;
// backlog is how many each lane has to admit (places past its cursor, plus its returning
// waiters). Mode share: each lane takes floor(credit) of its own, at most its backlog, in
// order while the budget lasts; mode priority: each lane takes what it can in order. What is
// left (the fractions, and the parts of lanes with nobody to admit) goes one admission at a
// time to the lane with waiters left and the most credit left: the sale never idles while
// anyone waits, and the rounding follows the shares.
func ApportionLanes(mode string, lanes []Lane, credit []float64, backlog []int64, budget int64) Apportioned {
	a := Apportioned{Own: make([]int64, len(lanes)), Extra: make([]int64, len(lanes))}
	if budget <= 0 {
		return a
	}
	left := budget
	for i, l := range lanes {
		if mode == LaneModePrio {
			a.Own[i] = min(left, backlog[i])
		} else {
			credit[i] += float64(budget) * l.Share
			a.Own[i] = max(min(int64(math.Floor(credit[i]+1e-9)), backlog[i], left), 0)
		}
		left -= a.Own[i]
	}
	for left > 0 {
		best := -1
		for i := range lanes {
			if backlog[i]-a.Own[i]-a.Extra[i] <= 0 {
				continue
			}
			if best < 0 || credit[i]-float64(a.Own[i]+a.Extra[i]) > credit[best]-float64(a.Own[best]+a.Extra[best])+1e-9 {
				best = i
			}
		}
		if best < 0 {
			break
		}
		a.Extra[best]++
		left--
	}
	return a
}

// SettleLanes charges each lane's credit with what it admitted (got), then bounds it: a lane
// left with nobody to admit banks at most one admission (an idle lane saves no rate), and
// no lane owes more than one (what it took of an idle lane's share is not paid back), as
// room_queue.lua does after the walks.
func SettleLanes(mode string, credit []float64, a Apportioned, backlog, got []int64) {
	if mode == LaneModePrio {
		return
	}
	for i := range credit {
		credit[i] -= float64(got[i])
		if backlog[i]-got[i] <= 0 {
			credit[i] = min(credit[i], 1)
		}
		credit[i] = max(credit[i], -1)
	}
}

// LaneStore is a Store that reads a lane's pre-queue (RedisStore, BoundStore over one):
// Prequeue of one lane's queue (a lane other than the public one, whose queue is the room's
// own).
type LaneStore interface {
	LanePrequeue(ctx context.Context, sale, lane string, from, count int64) (members []string, total int64, err error)
}

// ErrNoLaneStore: the store reads no lane's pre-queue.
var ErrNoLaneStore = errors.New("the room's store reads no lane's pre-queue")

// laneKeys are room_queue.lua's KEYS[16...] for a room with lanes: the codes hashes, then
// each lane's queue, away and back set (the public lane's are the room's own).
func laneKeys(sale string, lanes []Lane) []string {
	keys := []string{contract.RoomCodesKey(sale), contract.RoomCodesUsedKey(sale)}
	for _, l := range lanes {
		if l.Kind == LanePublic {
			keys = append(keys, contract.RoomQueueKey(sale), contract.RoomAwayKey(sale), contract.RoomBackKey(sale))
			continue
		}
		q := contract.RoomLaneQueueKey(sale, l.Name)
		keys = append(keys, q, q+":away", q+":back")
	}
	return keys
}
