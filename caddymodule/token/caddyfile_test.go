package token

import (
	"bytes"
	"os"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"
)

// Golden tests: testdata/caddyfile/<name>.caddyfile adapts to <name>.json. After a deliberate
// change: go test ./caddymodule/token -run Caddyfile -update.
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, "testdata/caddyfile", false)
}

func TestSeckillTokenRunsBeforeRespondWhereverItIsWritten(t *testing.T) {
	src, _ := os.ReadFile("testdata/caddyfile/defaults.caddyfile")
	got, _, err := handlertest.Adapt(src)
	if err != nil {
		t.Fatal(err)
	}
	tok, resp := bytes.Index(got, []byte(`"handler": "seckill_token"`)), bytes.Index(got, []byte(`"handler": "static_response"`))
	if tok < 0 || resp < 0 || tok > resp {
		t.Fatalf("seckill_token must be ordered before respond:\n%s", got)
	}
}

func TestCaddyfileRefusesMistakes(t *testing.T) {
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
