package room

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
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

// pageCSP is the waiting page's Content-Security-Policy (issue 24): nothing loads but the page
// itself; its one inline script and one inline style are allowed by hash, not by
// 'unsafe-inline', so injected markup runs nothing; the proof of work's Web Worker comes from a
// blob: URL; fetch goes to the gateway only; and no other site frames the page (clickjacking
// the Buy button) unless the shop lists its origins in frame_ancestors.
func pageCSP(ancestors []string) string {
	fa := "'none'"
	if len(ancestors) > 0 {
		fa = strings.Join(ancestors, " ")
	}
	return "default-src 'none'; script-src " + inlineHash(page, "<script>", "</script>") +
		"; style-src " + inlineHash(page, "<style>", "</style>") +
		"; worker-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors " + fa
}

// inlineHash is the CSP source of the first inline element between open and closing tags:
// 'sha256-<base64 of the SHA-256 of its text>'.
func inlineHash(html, open, closing string) string {
	i := strings.Index(html, open)
	j := strings.Index(html, closing)
	if i < 0 || j < i {
		return "'none'" // page.html without the element: nothing inline to allow
	}
	sum := sha256.Sum256([]byte(html[i+len(open) : j]))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// validSource reports whether s can stand as one frame-ancestors source: a scheme, a host
// (with an optional scheme, port, path and * wildcard) or 'self'. It refuses what would end
// the directive or the header (';', ',', spaces, quotes, control characters).
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

func (h *Room) servePage(w http.ResponseWriter, sale string) {
	requests.WithLabelValues("page", "ok").Inc()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", h.csp)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(strings.Replace(page, "{{SALE}}", sale, 1)))
}
