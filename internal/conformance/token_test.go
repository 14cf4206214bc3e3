package conformance

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/token"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// tokenCaddyfiles holds seckill_token's golden Caddyfiles.
const tokenCaddyfiles = "../../caddymodule/token/testdata/caddyfile"

// Golden tests: caddymodule/token/testdata/caddyfile/<name>.caddyfile adapts to <name>.json.
// After a deliberate change: go test ./internal/conformance -run TokenCaddyfile -update.
func TestTokenCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, tokenCaddyfiles, false)
}

func TestSeckillTokenRunsBeforeRespondWhereverItIsWritten(t *testing.T) {
	src, _ := os.ReadFile(tokenCaddyfiles + "/defaults.caddyfile")
	got, _, err := handlertest.Adapt(src)
	if err != nil {
		t.Fatal(err)
	}
	tok, resp := bytes.Index(got, []byte(`"handler": "seckill_token"`)), bytes.Index(got, []byte(`"handler": "static_response"`))
	if tok < 0 || resp < 0 || tok > resp {
		t.Fatalf("seckill_token must be ordered before respond:\n%s", got)
	}
}

func TestTokenCaddyfileRefusesMistakes(t *testing.T) {
	for _, body := range []string{
		"seckill_token { nonsense 1 }",
		"seckill_token { ttl }",
		"seckill_token { ttl soon }",
		"seckill_token { sale a b }",
		"seckill_token /x extra",
		"seckill_token { device_binding on }",
		"seckill_token { device_binding }",
		"seckill_token { proof_max_age soon }",
	} {
		handlertest.AdaptFails(t, ":8080 {\n"+body+"\n}\n")
	}
}

// A state-changing request a browser sends from another site (a simple
// text/plain form post, or a sibling subdomain's fetch) is refused 403 cross_site before the
// issuer does anything (this issuer was built without a store: reaching it would panic);
// the shared rule is handler.CheckRequest (its own test has the whole table).
func TestTokenRefusesACrossSiteRequestBeforeAnythingElse(t *testing.T) {
	handlertest.RefusesCrossSite(t, new(token.Issuer), "https://shop.example/seckill/s1/token", ``, http.MethodPost)
}
