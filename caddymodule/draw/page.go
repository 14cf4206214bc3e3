package draw

import (
	"embed"

	"github.com/seckilledge/seckill/caddymodule/internal/roomkit"
)

// pageFiles are our draw page: page.html, its "main" (its data are the sale id, the sale's
// sizes and the words in the page's language; the entry's state comes from the protocol's
// JSON answers, filled in by the script), and page.js, its own code.
//
//go:embed page.html page.js
var pageFiles embed.FS

var pageKind = roomkit.PageKind("draw", pageFiles)
