package room

import (
	_ "embed"

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
