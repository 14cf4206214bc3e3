package backend

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/lua"
)

// RoomSpec is a sale's waiting room, `"room": {...}` in POST /admin/sales (docs/room.md).
// Every field is optional: an absent one leaves the gateways' seckill_room default.
type RoomSpec struct {
	// Rate is admissions per second (0.001 to 1e6: room_setup.lua's bounds).
	Rate *float64 `json:"rate,omitempty"`
	// Oversubscribe is live admissions per remaining unit (>= 1).
	Oversubscribe *float64 `json:"oversubscribe,omitempty"`
	// Session is how long an admission lives unused (Go duration, >= 1s).
	Session string `json:"session,omitempty"`
	// Prequeue is how long before the start entries are taken (Go duration, >= 0).
	Prequeue string `json:"prequeue,omitempty"`
	// Difficulty is the proof-of-work [min, max] in bits; [0, 0] asks for none.
	Difficulty *Difficulty `json:"difficulty,omitempty"`
	// MaxWaiters is the most places the room holds (1..10 000 000); beyond it a new entry gets
	// 503 queue_full (issue 24).
	MaxWaiters *int64 `json:"max_waiters,omitempty"`
}

// Difficulty is a room's proof-of-work [min, max] in bits: exactly two numbers. A Go array
// alone would take [1, 2, 3] as [1, 2] and [5] as [5, 0] without a word (issue 24).
type Difficulty [2]int

// UnmarshalJSON takes exactly two integers.
func (d *Difficulty) UnmarshalJSON(b []byte) error {
	var v []int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if len(v) != 2 {
		return fmt.Errorf("room.difficulty is [min, max]: two numbers, not %d", len(v))
	}
	*d = Difficulty{v[0], v[1]}
	return nil
}

// minRoomRate is room_setup.lua's lowest rate: a sale accepted here must be one preheat can
// give its room (a refused room keeps the whole sale out of Redis, see Service.Preheat).
const minRoomRate = 0.001

// Validate checks a room spec with the bounds room_setup.lua enforces; the error names the
// field (room.<field>).
func (r RoomSpec) Validate() error {
	if _, err := r.maxWaitersArg(); err != nil {
		return err
	}
	_, err := r.args()
	return err
}

// maxWaitersArg is room_setup.lua's ARGV[10]: "" leaves the gateways' default.
func (r RoomSpec) maxWaitersArg() (string, error) {
	if r.MaxWaiters == nil {
		return "", nil
	}
	if *r.MaxWaiters < 1 || *r.MaxWaiters > 10_000_000 {
		return "", errors.New("room.max_waiters must be between 1 and 10000000 places")
	}
	return strconv.FormatInt(*r.MaxWaiters, 10), nil
}

// args are room_setup.lua's ARGV[3..8]: "" for a field the sale leaves to the gateways.
func (r RoomSpec) args() ([]any, error) {
	out := []any{"", "", "", "", "", ""}
	if r.Rate != nil {
		if !(*r.Rate >= minRoomRate && *r.Rate <= 1e6) {
			return nil, errors.New("room.rate must be between 0.001 and 1e6 admissions per second")
		}
		out[0] = strconv.FormatFloat(*r.Rate, 'f', -1, 64)
	}
	if r.Oversubscribe != nil {
		if *r.Oversubscribe < 1 || *r.Oversubscribe > 100 {
			return nil, errors.New("room.oversubscribe must be between 1 and 100")
		}
		out[1] = strconv.FormatFloat(*r.Oversubscribe, 'f', -1, 64)
	}
	for i, d := range []struct {
		name, v string
		min     time.Duration
	}{{"session", r.Session, time.Second}, {"prequeue", r.Prequeue, 0}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v < d.min {
			return nil, fmt.Errorf("room.%s must be a duration of at least %v", d.name, d.min)
		}
		out[2+i] = strconv.FormatInt(v.Milliseconds(), 10)
	}
	if r.Difficulty != nil {
		lo, hi := r.Difficulty[0], r.Difficulty[1]
		if lo < 0 || hi < lo || hi > 40 {
			return nil, errors.New("room.difficulty is [min, max] bits with 0 <= min <= max <= 40")
		}
		out[4], out[5] = strconv.Itoa(lo), strconv.Itoa(hi)
	}
	return out, nil
}

// RoomPreheat is what preheating a room did.
type RoomPreheat struct {
	// Created is true when this call drew the seed (a later preheat keeps it).
	Created bool `json:"created"`
	// SeedCommitment is the hex SHA-256 of the seed: published now, checked at the end.
	SeedCommitment string `json:"seed_commitment"`
}

// PreheatRoom gives a sale its waiting room: it draws the secret seed and entry key
// (crypto/rand, 32 bytes each) and runs room_setup.lua, which keeps the first seed if the room
// exists. until is when the room expires (the sale's end plus retention); zero copies the
// expiry of the sale's meta key, which must then exist. units is the sale's stock, which the
// room's built-in bound on places scales with; 0 reads it from the meta key. The backend's preheat calls it under
// the sale's lock BEFORE preheat.lua, which writes the sale only when the room is there. The
// seed never leaves Redis before the end of the sale; the commitment is public from now on.
func PreheatRoom(ctx context.Context, rdb redis.Scripter, sale string, spec RoomSpec, until time.Time, units int64) (RoomPreheat, error) {
	var res RoomPreheat
	args, err := spec.args()
	if err != nil {
		return res, err
	}
	maxWaiters, err := spec.maxWaitersArg()
	if err != nil {
		return res, err
	}
	seed, ekey := make([]byte, 32), make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return res, err
	}
	if _, err := rand.Read(ekey); err != nil {
		return res, err
	}
	sum := sha256.Sum256(seed)
	argv := append([]any{hex.EncodeToString(seed), hex.EncodeToString(ekey)}, args...)
	untilArg, unitsArg := "", ""
	if !until.IsZero() {
		untilArg = strconv.FormatInt(until.UnixMilli(), 10)
	}
	if units > 0 {
		unitsArg = strconv.FormatInt(units, 10)
	}
	argv = append(argv, hex.EncodeToString(sum[:]), maxWaiters, untilArg, unitsArg)
	out, err := lua.RoomSetup.Run(ctx, rdb, []string{contract.MetaKey(sale), roomKey(sale)}, argv...).Slice()
	if err != nil {
		return res, fmt.Errorf("room_setup.lua: %w", err)
	}
	if len(out) != 2 {
		return res, fmt.Errorf("room_setup.lua: %d values", len(out))
	}
	created, _ := out[0].(int64)
	res.Created = created == 1
	res.SeedCommitment, _ = out[1].(string)
	return res, nil
}

// roomKey is seckill_room's hash of a sale (caddymodule/room.RoomKey; the backend does not
// import the gateway's packages).
func roomKey(sale string) string { return contract.RoomKey(sale) }
