package draw

import (
	"net/http"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// The draw refuses another site's entries and withdrawals 403 cross_site before anything else
// (the shared rule is handler.CheckRequest, whose own test has the whole table).
func TestACrossSiteRequestIsRefusedBeforeAnythingElse(t *testing.T) {
	handlertest.RefusesCrossSite(t, bareDraw(), "https://shop.example/seckill/s1/draw", `{"variant":"42"}`, http.MethodPost, http.MethodDelete)
}

// The draw's challenges (its own path and the path it shares with the waiting room) are
// refused cross-site too: each spends the user's open challenges.
func TestAChallengeIsNotIssuedToAnotherSite(t *testing.T) {
	for _, path := range []string{"/seckill/s1/draw/challenge", "/seckill/s1/challenge"} {
		handlertest.RefusesCrossSite(t, bareDraw(), "https://shop.example"+path, ``, http.MethodGet)
	}
}

// bareDraw has the refusal writer's counters only, as Provision sets them, and no store:
// reaching it would panic.
func bareDraw() *Draw { return &Draw{Kit: roomkit.Kit{Endpoints: kitMetrics.Endpoints("draw")}} }
