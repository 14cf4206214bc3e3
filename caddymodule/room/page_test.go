package room

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
	clientjs "github.com/seckilledge/seckill/clients/js"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// The waiting page runs the JavaScript client, clients/js/seckill.js, byte for byte:
// its one script opens with the client, and what follows, the page's own code, speaks none of
// the protocol itself (no fetch, no worker, no protocol header), so the Chromium tests of the
// page are tests of the client.
func TestTheWaitingPageRunsTheJavaScriptClient(t *testing.T) {
	kit, err := pagekit.New(pageKind, pagekit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	if err := kit.Serve(w, httptest.NewRequest("GET", "/seckill/s1/x", nil), "s1", []string{"S", "M"}, nil); err != nil {
		t.Fatal(err)
	}
	checkPageRunsClient(t, w.Body.String())
}

func checkPageRunsClient(t *testing.T, html string) {
	t.Helper()
	const open = `<script type="module">`
	i, j := strings.Index(html, open), strings.Index(html, "</script>")
	if i < 0 || j < i || strings.Count(html, "<script") != 1 {
		t.Fatalf("want one module script in the page")
	}
	script := strings.TrimPrefix(html[i+len(open):j], "\n")
	own, ok := strings.CutPrefix(script, clientjs.Source)
	own = strings.TrimPrefix(own, "\n")
	if !ok {
		t.Fatalf("the page's script does not open with clients/js/seckill.js")
	}
	for _, s := range []string{"fetch(", "X-Seckill-", "crypto.", "XMLHttpRequest"} {
		if strings.Contains(own, s) {
			t.Errorf("the page's own code has %q: it speaks the protocol itself", s)
		}
	}
	// One worker of its own: the kit's timer, which keeps a background tab's polls on time.
	if !strings.HasPrefix(own, pagekit.JS) || strings.Count(own, "new Worker") != 1 || strings.Count(pagekit.JS, "new Worker") != 1 {
		t.Errorf("the page's own code starts workers beyond the kit's timer")
	}
	if strings.Count(own, "new Client(") != 1 {
		t.Errorf("the page's own code makes no Client")
	}
}

// A shop's bad template stops the handler at provision, with the file and line; the page
// options' Caddyfile block refuses what it does not know.
func TestABadShopTemplateFailsTheRoomsProvision(t *testing.T) {
	bad := t.TempDir() + "/room.html"
	if err := os.WriteFile(bad, []byte("<main>\n<p>{{.T \"room.heading\"}}</p>\n<p>{{.Queue.Position}}</p>\n</main>{{.Script}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &Room{Kit: roomkit.Kit{Page: &pagekit.Config{Template: bad}}}
	if err := h.SetupPage(pageKind); err == nil || !strings.Contains(err.Error(), bad+":3:") {
		t.Fatalf("SetupPage = %v, want the template's file and line 3", err)
	}
	handlertest.AdaptFails(t,
		":80 {\n seckill_room {\n page {\n bogus 1\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n template\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n lang de en\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n sale\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n sale s1 {\n theme dark\n }\n }\n }\n}",
		":80 {\n seckill_room {\n page {\n image_sources\n }\n }\n}",
	)
}
