package room

import (
	"strings"
	"testing"

	clientjs "github.com/seckilledge/seckill/clients/js"
)

// The waiting page runs the JavaScript client, clients/js/seckill.js, byte for byte (issue 39):
// its one script opens with the client, and what follows, the page's own code, speaks none of
// the protocol itself (no fetch, no worker, no protocol header), so the Chromium tests of the
// page are tests of the client.
func TestTheWaitingPageRunsTheJavaScriptClient(t *testing.T) {
	checkPageRunsClient(t, page)
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
	if !ok {
		t.Fatalf("the page's script does not open with clients/js/seckill.js")
	}
	for _, s := range []string{"fetch(", "new Worker", "X-Seckill-", "crypto.", "XMLHttpRequest"} {
		if strings.Contains(own, s) {
			t.Errorf("the page's own code has %q: it speaks the protocol itself", s)
		}
	}
	if strings.Count(own, "new Client(") != 1 {
		t.Errorf("the page's own code makes no Client")
	}
}
