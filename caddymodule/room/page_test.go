package room

import (
	"os"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagetest"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
)

// The waiting page runs the JavaScript client, clients/js/seckill.js, byte for byte, and speaks
// none of the protocol itself (pagetest.RunsClient), so the Chromium tests of the page are
// tests of the client.
func TestTheWaitingPageRunsTheJavaScriptClient(t *testing.T) {
	pagetest.RunsClient(t, pageKind)
}

// A shop's bad template stops the handler at provision, with the file and line (the page
// options' Caddyfile block: internal/conformance's TestRoomPageOptionsRefuseWhatTheyDoNotKnow).
func TestABadShopTemplateFailsTheRoomsProvision(t *testing.T) {
	bad := t.TempDir() + "/room.html"
	if err := os.WriteFile(bad, []byte("<main>\n<p>{{.T \"room.heading\"}}</p>\n<p>{{.Queue.Position}}</p>\n</main>{{.Script}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &Room{Kit: roomkit.Kit{Page: &pagekit.Config{Template: bad}}}
	if err := h.SetupPage(pageKind); err == nil || !strings.Contains(err.Error(), bad+":3:") {
		t.Fatalf("SetupPage = %v, want the template's file and line 3", err)
	}
}
