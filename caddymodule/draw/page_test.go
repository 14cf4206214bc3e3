package draw

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	clientjs "github.com/seckilledge/seckill/clients/js"
)

// The entry page runs the JavaScript client, clients/js/seckill.js, byte for byte:
// its one script opens with the client, and what follows, the page's own code, speaks none of
// the protocol itself (no fetch, no worker, no protocol header), so the Chromium tests of the
// page are tests of the client.
func TestTheEntryPageRunsTheJavaScriptClient(t *testing.T) {
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
