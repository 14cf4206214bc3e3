package core

import (
	throttlecore "github.com/seckilledge/seckill/caddymodule/throttle/core"
	"github.com/seckilledge/seckill/contract"
)

// BanKey is the throttle's ban hash of user in zone (a zone keyed on the room's user id), as
// caddymodule/throttle writes it: the zone's counter key for the user's key, plus ":ban".
// RedisStore.Banned reads it (the room's handler, bans.go, has why).
func BanKey(zone, user string) string {
	return contract.ThrottleKey(zone, throttlecore.SafeKey(user)) + ":ban"
}
