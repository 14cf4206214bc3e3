package conformance

import (
	"strings"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"
)

// The room kit's (caddymodule/internal/roomkit) options are refused alike by both handlers that embed it: an unknown option, a
// directive's argument, and each shared option's bad value (the handlers' own options are
// refused in their packages' tests).
func TestBothHandlersRefuseTheKitsBadOptions(t *testing.T) {
	bad := []string{
		"bogus 1",
		"difficulty_rate fast",
		"cache_ttl",
		"retry_after soon",
		"frame_ancestors",
		"handle_errors please",
		"max_pending many",
		"challenge_life soon",
		"challenges_per_user many",
		"challenge_prefix 24",
		"challenge_prefix 24 x",
	}
	for _, directive := range []string{"seckill_room", "seckill_draw"} {
		srcs := []string{":80 {\n " + directive + " extra\n}"}
		for _, b := range bad {
			srcs = append(srcs, ":80 {\n "+directive+" {\n "+strings.ReplaceAll(b, "\n", "\n ")+"\n }\n}")
		}
		t.Run(directive, func(t *testing.T) { handlertest.AdaptFails(t, srcs...) })
	}
}
