package draw

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
)

// page is the entry page: self-contained HTML and JavaScript (no CDN), served on a GET of the
// draw path with Accept: text/html. Its variables, the sale id and the sale's variants (ids
// checked against the id pattern, so they need no escaping), sit in attributes, not in the
// script, so the script's hash is fixed.
//
//go:embed page.html
var page string

// pageCSP is the entry page's Content-Security-Policy, the waiting page's: nothing loads but
// the page itself; its one inline script and one inline style are allowed by hash, so injected
// markup runs nothing; the proof of work's Web Worker comes from a blob: URL; fetch goes to
// the gateway only; and no other site frames the page unless frame_ancestors lists it.
func pageCSP(ancestors []string) string {
	fa := "'none'"
	if len(ancestors) > 0 {
		fa = strings.Join(ancestors, " ")
	}
	return "default-src 'none'; script-src " + inlineHash(page, "<script>", "</script>") +
		"; style-src " + inlineHash(page, "<style>", "</style>") +
		"; worker-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors " + fa
}

// inlineHash is the CSP source of the first inline element between open and closing tags.
func inlineHash(html, open, closing string) string {
	i := strings.Index(html, open)
	j := strings.Index(html, closing)
	if i < 0 || j < i {
		return "'none'"
	}
	sum := sha256.Sum256([]byte(html[i+len(open) : j]))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// validSource reports whether s can stand as one frame-ancestors source (as the waiting
// room's option): it refuses what would end the directive or the header.
func validSource(s string) bool {
	if s == "'self'" || s == "'none'" {
		return true
	}
	if s == "" || len(s) > 256 {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":/.-*_~%[]", c)
		if !ok {
			return false
		}
	}
	return true
}

// servePage answers the entry page of a draw sale, with the sale's variants for the size
// picker; a sale that is not a draw gets the JSON refusal, as the API would answer.
func (h *Draw) servePage(ctx context.Context, w http.ResponseWriter, sale string) error {
	c, err := h.saleOf(ctx, sale)
	if err != nil {
		return h.unavailable(w, "page", err)
	}
	if !c.draw {
		return h.refuse(w, "page", noDraw)
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
