// Package pagecsp checks the sources a shop lists for the Content-Security-Policy of the pages
// the gateway serves itself (the waiting room's and the draw's): frame_ancestors,
// the origins that may frame a page that holds a Buy button. The policy itself is
// caddymodule/internal/pagekit's (our one script and each of the page's styles by
// their SHA-256, never 'unsafe-inline').
package pagecsp

import (
	"fmt"
	"strings"
)

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
