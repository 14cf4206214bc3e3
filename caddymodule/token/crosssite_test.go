package token

import (
	"net/http"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"
)

// A state-changing request a browser sends from another site (a simple
// text/plain form post, or a sibling subdomain's fetch) is refused 403 cross_site before the
// handler does anything (this handler was built without a store: reaching it would panic);
// the shared rule is refusal.CheckRequest (its own test has the whole table).
func TestACrossSiteRequestIsRefusedBeforeAnythingElse(t *testing.T) {
	handlertest.RefusesCrossSite(t, new(Issuer), "https://shop.example/seckill/s1/token", ``, http.MethodPost)
}
