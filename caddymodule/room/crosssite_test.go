package room

import (
	"net/http"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// A state-changing request a browser sends from another site (a simple text/plain form post,
// or a sibling subdomain's fetch) is refused 403 cross_site before the handler does anything:
// the room below has only the refusal writer's counters, as Provision sets them, and no store
// (reaching it would panic). The shared rule is handler.CheckRequest (its own test has the
// whole table).
func TestACrossSiteRequestIsRefusedBeforeAnythingElse(t *testing.T) {
	handlertest.RefusesCrossSite(t, bareRoom(), "https://shop.example/seckill/s1/queue", ``, http.MethodPost, http.MethodDelete)
}

// GET /challenge is refused cross-site too: it spends the user's open challenges (at most
// challenges_per_user), so another site's page could keep him from entering the room.
func TestAChallengeIsNotIssuedToAnotherSite(t *testing.T) {
	handlertest.RefusesCrossSite(t, bareRoom(), "https://shop.example/seckill/s1/challenge", ``, http.MethodGet)
}

func bareRoom() *Room { return &Room{Kit: roomkit.Kit{Endpoints: kitMetrics.Endpoints("room")}} }
