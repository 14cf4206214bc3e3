package draw

import (
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/internal/validatetest"
)

// The draw's golden Caddyfiles are checked in internal/conformance
// (TestDrawCaddyfileAdaptsToTheDocumentedJSON), which links every module.

// Every option of the draw is the kit's: roomkit's TestBothHandlersRefuseTheKitsBadOptions
// refuses their bad values for seckill_draw and seckill_room alike.

func TestValidateRefusesImpossibleSettings(t *testing.T) {
	validatetest.Validates(t, (*Draw).setDefaults, new(Draw), map[string]*Draw{
		"negative rate": {Kit: roomkit.Kit{DifficultyRate: -1}},
		"negative ttl":  {Kit: roomkit.Kit{CacheTTL: -1}},
		"bad frame":     {Kit: roomkit.Kit{FrameAncestors: []string{"a; script-src *"}}},
	})
}
