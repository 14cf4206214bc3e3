package room

import (
	_ "embed"
	"net/http"
	"strings"
)

// page is the waiting page: self-contained HTML and JavaScript (no CDN), served on a GET of
// the queue path with Accept: text/html. The sale id (checked against the id pattern, so it
// needs no escaping) is its only variable, and it sits in an attribute, not in the script, so
// the script's hash is fixed.
//
//go:embed page.html
var page string

func (h *Room) servePage(w http.ResponseWriter, sale string) {
	requests.WithLabelValues("page", "ok").Inc()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", h.csp)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(strings.Replace(page, "{{SALE}}", sale, 1)))
}
