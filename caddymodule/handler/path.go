package handler

import (
	"net/http"
	"path"
	"strings"
)

// CheckPath refuses a request whose path is not in canonical form ("..", ".", "//"
// segments). Caddy's route matchers match the cleaned path, but the {http.request.uri.path.N}
// placeholders read the path as sent: /seckill/a/../b/token matches the routes of sale b
// while the placeholder names sale a, so a per-sale rule (forward_auth, a WAF rule) would be
// bypassed. A trailing slash is canonical. It returns PathMismatch and false for such a path.
func CheckPath(r *http.Request) (Refusal, bool) {
	p := r.URL.Path
	if p == "" {
		return Refusal{}, true
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	if c != p {
		return PathMismatch, false
	}
	return Refusal{}, true
}
