package gate

import (
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"
)

// TestCaddyfileAdaptsToTheDocumentedJSON adapts every testdata/adapt/*.caddyfile and compares
// it with the .json next to it (-update or UPDATE_GOLDEN=1 rewrites them).
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, "testdata/adapt", false)
}

func TestCaddyfileRefusesUnknownOptions(t *testing.T) {
	handlertest.AdaptFails(t,
		":80 {\n seckill_gate {\n bogus 1\n }\n}",
		":80 {\n seckill_gate {\n redis sometimes\n }\n}",
		"{\n seckill {\n relay {\n batch_size -1\n }\n }\n}\n:80 {\n seckill_gate\n}",
		":80 {\n seckill_gate extra\n}",
	)
}
