package draw

import (
	_ "embed"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	clientjs "github.com/seckilledge/seckill/clients/js"
)

// pageTemplate is our draw page (html/template): it defines "page", and the parts a shop's
// own template may call, "style" and "main". Its data are the sale id, the sale's sizes and
// the words in the page's language; the entry's state comes from the protocol's JSON answers,
// filled in by the script.
//
//go:embed page.html
var pageTemplate string

// pageJS is the page's own code, after the JavaScript client (clients/js/seckill.js, the very
// bytes published to npm) and the kit's in the page's one module script, whose hash the
// Content-Security-Policy names.
//
//go:embed page.js
var pageJS string

var pageKind = pagekit.Kind{Name: "draw", Template: pageTemplate, Script: pagekit.Script(clientjs.Source, pageJS)}
