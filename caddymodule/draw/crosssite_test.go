package draw

import (
	"net/http"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// A state-changing request a browser sends from another site (a simple
// text/plain form post, or a sibling subdomain's fetch) is refused 403 cross_site before the
// handler does anything (this handler was built without a store: reaching it would panic);
// the shared rule is handler.CheckRequest (its own test has the whole table).
func TestACrossSiteRequestIsRefusedBeforeAnythingElse(t *testing.T) {
	// Only the refusal writer's counters are set, as Provision sets them.
	handlertest.RefusesCrossSite(t, &Draw{Kit: roomkit.Kit{Endpoints: handler.Endpoints{Requests: requests, Shed: shed, Name: "draw"}}}, "https://shop.example/seckill/s1/draw", `{"variant":"42"}`, http.MethodPost, http.MethodDelete)
}

// The draw's challenges (its own path and the path it shares with the waiting room) are
// refused cross-site too: each spends the user's open challenges.
func TestAChallengeIsNotIssuedToAnotherSite(t *testing.T) {
	for _, path := range []string{"/seckill/s1/draw/challenge", "/seckill/s1/challenge"} {
		handlertest.RefusesCrossSite(t, &Draw{Kit: roomkit.Kit{Endpoints: handler.Endpoints{Requests: requests, Shed: shed, Name: "draw"}}}, "https://shop.example"+path, ``, http.MethodGet)
	}
}
