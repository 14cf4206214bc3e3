package room

import (
	"embed"

	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
)

// pageFiles are our waiting page: page.html, its "main" (everything it shows comes from the
// protocol's JSON answers, filled in by the script; the template only gives the words in the
// page's language, so serving it asks Redis nothing), and page.js, its own code.
//
//go:embed page.html page.js
var pageFiles embed.FS

var pageKind = roomkit.PageKind("room", pageFiles)
