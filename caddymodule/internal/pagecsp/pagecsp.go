// Package pagecsp is the Content-Security-Policy of the pages the gateway serves itself (the
// waiting room's and the draw's entry page, issue 24): nothing loads but the page itself; its
// one inline script (a module: the JavaScript client, clients/js/seckill.js, then the page's
// code) and one inline style are allowed by their SHA-256, not by 'unsafe-inline', so
// injected markup runs nothing; the client's proof-of-work Web Worker comes from a blob: URL; fetch
// goes to the gateway only; and no other site frames the page (clickjacking a button) unless
// the shop lists its origins in frame_ancestors.
package pagecsp

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// Policy is the policy of html, framed only by ancestors (none when empty).
func Policy(html string, ancestors []string) string {
	fa := "'none'"
	if len(ancestors) > 0 {
		fa = strings.Join(ancestors, " ")
	}
	return "default-src 'none'; script-src " + inlineHash(html, "<script", "</script>") +
		"; style-src " + inlineHash(html, "<style", "</style>") +
		"; worker-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors " + fa
}

// inlineHash is the CSP source of the first inline element opened by open (the tag's name:
// its attributes, such as type="module", end at the next '>') and ended by closing:
// 'sha256-<base64 of the SHA-256 of its text>'.
func inlineHash(html, open, closing string) string {
	i := strings.Index(html, open)
	if i < 0 {
		return "'none'" // a page without the element: nothing inline to allow
	}
	gt := strings.IndexByte(html[i:], '>')
	j := strings.Index(html, closing)
	if gt < 0 || j < i+gt {
		return "'none'"
	}
	sum := sha256.Sum256([]byte(html[i+gt+1 : j]))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// ValidSource reports whether s can stand as one frame-ancestors source: a scheme, a host
// (with an optional scheme, port, path and * wildcard) or 'self'. It refuses what would end
// the directive or the header (';', ',', spaces, quotes, control characters).
func ValidSource(s string) bool {
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

// CheckAncestors checks a handler's frame_ancestors option (handler names it in the error).
func CheckAncestors(handler string, ancestors []string) error {
	for _, a := range ancestors {
		if !ValidSource(a) {
			return fmt.Errorf("%s: frame_ancestors: %q is not a CSP source", handler, a)
		}
	}
	return nil
}
