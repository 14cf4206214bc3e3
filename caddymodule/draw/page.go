package draw

import (
	"context"
	_ "embed"
	"net/http"
	"strings"

	clientjs "github.com/seckilledge/seckill/clients/js"
)

// page is the entry page: self-contained HTML and JavaScript (no CDN), served on a GET of the
// draw path with Accept: text/html. Its variables, the sale id and the sale's variants (ids
// checked against the id pattern, so they need no escaping), sit in attributes, not in the
// script, so the script's hash is fixed.
//
//go:embed page.html
var pageHTML string

// page is pageHTML with the JavaScript client (clients/js/seckill.js, the very bytes published
// to npm) inlined at the head of the page's one module script: the page drives the protocol
// through it, and the script's hash, in the Content-Security-Policy, covers both.
var page = strings.Replace(pageHTML, "/*{{CLIENT}}*/", clientjs.Source, 1)

// servePage answers the entry page of a draw sale, with the sale's variants for the size
// picker; a sale that is not a draw gets the JSON refusal, as the API would answer.
func (h *Draw) servePage(ctx context.Context, w http.ResponseWriter, sale string) error {
	c, err := h.saleOf(ctx, sale)
	if err != nil {
		return h.ep.Unavailable(w, "page", err)
	}
	if !c.draw {
		return h.ep.Refuse(w, "page", noDraw)
	}
	requests.WithLabelValues("page", "ok").Inc()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", h.csp)
	w.WriteHeader(http.StatusOK)
	html := strings.Replace(page, "{{SALE}}", sale, 1)
	html = strings.Replace(html, "{{VARIANTS}}", strings.Join(c.variants, ","), 1)
	_, err = w.Write([]byte(html))
	return err
}
