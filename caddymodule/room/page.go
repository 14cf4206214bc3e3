package room

import (
	_ "embed"
	"net/http"
	"strings"

	clientjs "github.com/seckilledge/seckill/clients/js"
)

// page is the waiting page: self-contained HTML and JavaScript (no CDN), served on a GET of
// the queue path with Accept: text/html. The sale id (checked against the id pattern, so it
// needs no escaping) is its only variable, and it sits in an attribute, not in the script, so
// the script's hash is fixed.
//
//go:embed page.html
var pageHTML string

// page is pageHTML with the JavaScript client (clients/js/seckill.js, the very bytes published
// to npm) inlined at the head of the page's one module script: the page drives the protocol
// through it, and the script's hash, in the Content-Security-Policy, covers both.
var page = strings.Replace(pageHTML, "/*{{CLIENT}}*/", clientjs.Source, 1)

func (h *Room) servePage(w http.ResponseWriter, sale string) {
	requests.WithLabelValues("page", "ok").Inc()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", h.csp)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(strings.Replace(page, "{{SALE}}", sale, 1)))
}
