package conformance

import (
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"

	_ "github.com/seckilledge/seckill" // seckill_room, the seckill global option, and the draw full.caddyfile names
)

// roomAdapt and drawAdapt hold seckill_room's and seckill_draw's golden Caddyfiles.
const (
	roomAdapt = "../../caddymodule/room/testdata/adapt"
	drawAdapt = "../../caddymodule/draw/testdata/adapt"
)

// Golden tests: caddymodule/room/testdata/adapt/<name>.caddyfile adapts to <name>.json.
// After a deliberate change: go test ./internal/conformance -run RoomCaddyfile -update.
func TestRoomCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, roomAdapt, false)
}

func TestRoomCaddyfileRefusesBadOptions(t *testing.T) {
	handlertest.AdaptFails(t,
		":80 {\n seckill_room {\n difficulty 3\n }\n}",
		":80 {\n seckill_room {\n lane_claims\n }\n}",
		":80 {\n seckill_room {\n rate fast\n }\n}",
		":80 {\n seckill_room {\n refresh 1s\n }\n}",
		":80 {\n seckill_room {\n max_waiters 0\n }\n}",
		":80 {\n seckill_room {\n max_waiters lots\n }\n}",
		":80 {\n seckill_room {\n summary_interval soon\n }\n}",
		":80 {\n seckill_room {\n front_window\n }\n}",
		":80 {\n seckill_room {\n presence_window soon\n }\n}",
		":80 {\n seckill_room {\n ban_zones\n }\n}",
		":80 {\n seckill_room {\n claim_window soon\n }\n}",
		":80 {\n seckill_room {\n claim_window 0s\n }\n}",
		":80 {\n seckill_room {\n oversubscribe_max lots\n }\n}",
	)
}

// The page options' Caddyfile block refuses what it does not know (a shop's bad template is
// refused at provision: the room's TestABadShopTemplateFailsTheRoomsProvision).
func TestRoomPageOptionsRefuseWhatTheyDoNotKnow(t *testing.T) {
	handlertest.AdaptFails(t,
		":80 {\n seckill_room {\n page {\n bogus 1\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n template\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n lang de en\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n sale\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n sale s1 {\n theme dark\n }\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n image_sources\n }\n }\n}",
	)
}

// Golden tests: caddymodule/draw/testdata/adapt/<name>.caddyfile adapts to <name>.json.
// full.caddyfile writes seckill_room before seckill_draw in one handle: the directive order
// must put the draw first all the same. After a deliberate change: go test
// ./internal/conformance -run DrawCaddyfile -update.
func TestDrawCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, drawAdapt, false)
}
