package draw

import (
	"testing"

	_ "github.com/seckilledge/seckill/caddymodule" // the seckill global option
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	_ "github.com/seckilledge/seckill/caddymodule/room" // full.caddyfile's seckill_room (a test dependency only)
	"github.com/seckilledge/seckill/internal/handlertest"
)

// TestCaddyfileAdaptsToTheDocumentedJSON adapts every testdata/adapt/*.caddyfile and compares
// it with the .json next to it (-update or UPDATE_GOLDEN=1 rewrites them). full.caddyfile
// writes seckill_room before seckill_draw in one handle: the directive order must put the draw
// first all the same.
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, "testdata/adapt", false)
}

// Every option of the draw is the kit's: roomkit's TestBothHandlersRefuseTheKitsBadOptions
// refuses their bad values for seckill_draw and seckill_room alike.

func TestValidateRefusesImpossibleSettings(t *testing.T) {
	handlertest.Validates(t, (*Draw).setDefaults, new(Draw), map[string]*Draw{
		"negative rate": {Kit: roomkit.Kit{DifficultyRate: -1}},
		"negative ttl":  {Kit: roomkit.Kit{CacheTTL: -1}},
		"bad frame":     {Kit: roomkit.Kit{FrameAncestors: []string{"a; script-src *"}}},
	})
}
