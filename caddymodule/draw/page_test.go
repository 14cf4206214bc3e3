package draw

import (
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
)

// The entry page runs the JavaScript client, clients/js/seckill.js, byte for byte, and speaks
// none of the protocol itself (pagetest.RunsClient), so the Chromium tests of the page are
// tests of the client.
func TestTheEntryPageRunsTheJavaScriptClient(t *testing.T) {
	pagetest.RunsClient(t, pageKind)
}
