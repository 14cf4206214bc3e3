package core

import (
	"net/http"
	"net/url"
	"strings"
)

// SameOrigin reports whether a browser could have sent r from a page of the site it is sent
// to. A simple cross-site POST (a form, Content-Type text/plain) carries the session
// cookie whenever the shop's cookie is SameSite=None, and always from a sibling subdomain
// (same-site), so it could enter a victim in a draw or move him to another size. The browser
// sets Sec-Fetch-Site and Origin, and no page can forge them:
//
//   - Sec-Fetch-Site: cross-site is refused;
//   - an Origin (sent on every cross-origin request and every POST) must be this request's
//     scheme and host; "null" (a sandboxed frame, a data: URL) is not;
//   - a request with neither (curl, a mobile app, an old browser on a same-origin page) passes:
//     it is no browser acting for another site.
//
// The host compared is the Host header: behind a proxy that rewrites it, keep the original
// (Caddy's reverse_proxy does by default). The scheme is not compared: a TLS-terminating proxy
// in front of Caddy would make every https page look cross-origin.
func SameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o, ok := r.Header["Origin"]
	if !ok {
		return true
	}
	if len(o) != 1 {
		return false
	}
	u, err := url.Parse(o[0])
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.User == nil && strings.EqualFold(u.Host, r.Host)
}
