package sales

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/lua"
)

// roomArgs are room_setup.lua's ARGV[3..8] and ARGV[10] (max waiters) for a room spec: "" for a
// field the sale leaves to the gateways. The spec is checked first (admin.RoomSpec.Validate), so
// what is formatted here is within the script's bounds.
func roomArgs(r admin.RoomSpec) (args []any, maxWaiters string, err error) {
	if err := r.Validate(); err != nil {
		return nil, "", err
	}
	args = []any{"", "", "", "", "", ""}
	if r.Rate != nil {
		args[0] = strconv.FormatFloat(*r.Rate, 'f', -1, 64)
	}
	if r.Oversubscribe != nil {
		args[1] = strconv.FormatFloat(*r.Oversubscribe, 'f', -1, 64)
	}
	for i, d := range []admin.Duration{r.Session, r.Prequeue} {
		if d != "" {
			v, _ := d.Parse() // checked by Validate
			args[2+i] = strconv.FormatInt(v.Milliseconds(), 10)
		}
	}
	if r.Difficulty != nil {
		args[4], args[5] = strconv.Itoa(r.Difficulty[0]), strconv.Itoa(r.Difficulty[1])
	}
	if r.MaxWaiters != nil {
		maxWaiters = strconv.FormatInt(*r.MaxWaiters, 10)
	}
	return args, maxWaiters, nil
}

// PreheatRoom gives a sale its waiting room: it draws the secret seed and entry key
// (crypto/rand, 32 bytes each) and runs room_setup.lua, which keeps the first seed if the room
// exists. until is when the room expires (the sale's end plus retention); zero copies the
// expiry of the sale's meta key, which must then exist. units is the sale's stock, which the
// room's built-in bound on places scales with; 0 reads it from the meta key. The backend's preheat calls it under
// the sale's lock BEFORE preheat.lua, which writes the sale only when the room is there. The
// seed never leaves Redis before the end of the sale; the commitment is public from now on.
func PreheatRoom(ctx context.Context, rdb redis.Scripter, sale string, spec admin.RoomSpec, until time.Time, units int64) (admin.RoomPreheat, error) {
	var res admin.RoomPreheat
	args, maxWaiters, err := roomArgs(spec)
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
	argv = append(argv, hex.EncodeToString(sum[:]), maxWaiters, untilArg, unitsArg, spec.LanesField())
	out, err := lua.RoomSetup.Run(ctx, rdb, []string{contract.MetaKey(sale), contract.RoomKey(sale)}, argv...).Slice()
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
