package room

import (
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"

	// Every module the shipped Caddyfiles name.
	_ "github.com/seckilledge/seckill/caddymodule"
	_ "github.com/seckilledge/seckill/caddymodule/draw"
	_ "github.com/seckilledge/seckill/caddymodule/gate"
	_ "github.com/seckilledge/seckill/caddymodule/identity"
	_ "github.com/seckilledge/seckill/caddymodule/throttle"
	_ "github.com/seckilledge/seckill/caddymodule/token"
)

// Every shipped Caddyfile puts its rooms behind a throttle with a user zone, so each
// seckill_room names that zone in ban_zones (issue 35): a user the throttle bans cannot buy,
// and his admission is passed on at once instead of sitting unused for a session. Each zone
// named must be a seckill_throttle zone of the same file keyed on the room's own user id,
// else the room would read bans of other people.
func TestShippedCaddyfilesPassOnTheAdmissionsOfBannedUsers(t *testing.T) {
	handlertest.AdaptShipped(t, "../..", func(f string, cfg any) {
		zones := map[string]map[string]bool{} // zone name -> its keys
		var rooms []map[string]any
		handlertest.WalkJSON(cfg, func(m map[string]any) {
			switch m["handler"] {
			case "seckill_throttle":
				zs, _ := m["zones"].([]any)
				for _, z := range zs {
					zm, _ := z.(map[string]any)
					name, _ := zm["name"].(string)
					key, _ := zm["key"].(string)
					if zones[name] == nil {
						zones[name] = map[string]bool{}
					}
					zones[name][key] = true
				}
			case "seckill_room":
				rooms = append(rooms, m)
			}
		})
		if len(rooms) == 0 {
			t.Fatalf("%s: no seckill_room", f)
		}
		for _, r := range rooms {
			user, _ := r["user"].(string)
			names, _ := r["ban_zones"].([]any)
			if len(names) == 0 {
				t.Errorf("%s: a seckill_room (user %s) without ban_zones", f, user)
			}
			for _, n := range names {
				name, _ := n.(string)
				if !zones[name][user] {
					t.Errorf("%s: ban_zones names %q, but no throttle zone of that name is keyed on the room's user %s (zones: %v)", f, name, user, zones[name])
				}
			}
		}
	})
}
