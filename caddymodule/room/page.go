package room

import (
	_ "embed"
	"net/http"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	clientjs "github.com/seckilledge/seckill/clients/js"
)

// pageTemplate is our waiting page (html/template): it defines "page", and the parts a
// shop's own template may call, "style" and "main". Everything it shows comes from the
// protocol's JSON answers, filled in by the script; the template only gives the words in the
// page's language, so serving it asks Redis nothing.
//
//go:embed page.html
var pageTemplate string

// pageJS is the page's own code, after the JavaScript client (clients/js/seckill.js, the very
// bytes published to npm) and the kit's in the page's one module script, whose hash the
// Content-Security-Policy names.
//
//go:embed page.js
var pageJS string

// pageKind is the waiting page for pagekit.
var pageKind = pagekit.Kind{Name: "room", Template: pageTemplate, Script: pagekit.Script(clientjs.Source, pageJS)}

// setupPage compiles the page options (our page, or the shop's template), checked here so
// that a bad template fails at provision.
func (h *Room) setupPage() (err error) {
	h.page, err = pagekit.Compile(pageKind, h.Page)
	return err
}

func (h *Room) servePage(w http.ResponseWriter, r *http.Request, sale string) {
	requests.WithLabelValues("page", "ok").Inc()
	_ = h.page.Serve(w, r, sale, nil, h.FrameAncestors)
}
