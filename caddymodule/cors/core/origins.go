package core

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// AllowList is the origins whose pages may call the edge with the buyer's credentials. It
// matches an Origin header exactly, in the form browsers send it (scheme://host[:port],
// lower case, no default port): no wildcard, because with credentials a wildcard would hand
// the buyer's session to every site it matched.
type AllowList struct {
	origins map[string]struct{}
}

// ErrWildcard refuses "*": browsers never send credentials to Access-Control-Allow-Origin: *,
// and echoing any Origin instead would let every site act with the buyer's session.
var ErrWildcard = errors.New(`"*" cannot be allowed with credentials: list each origin of the shop's pages (https://shop.example)`)

// NewAllowList parses the origins (ParseOrigin); the first bad one is the error.
func NewAllowList(origins []string) (AllowList, error) {
	l := AllowList{origins: make(map[string]struct{}, len(origins))}
	for _, o := range origins {
		c, err := ParseOrigin(o)
		if err != nil {
			return AllowList{}, err
		}
		l.origins[c] = struct{}{}
	}
	return l, nil
}

// ParseOrigin returns the origin in the form browsers send (scheme and host in lower case, the
// scheme's default port dropped), or an error that says what an origin is.
func ParseOrigin(s string) (string, error) {
	switch {
	case s == "*":
		return "", ErrWildcard
	case strings.Contains(s, "*"):
		return "", fmt.Errorf("origin %q: no wildcards: list each origin", s)
	case strings.EqualFold(s, "null"):
		return "", fmt.Errorf(`origin "null" is what sandboxed frames, data: and file: pages send: any site can send it`)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("origin %q: %v", s, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" || u.User != nil || u.Path != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || strings.HasSuffix(s, "#") {
		return "", fmt.Errorf("origin %q: want scheme://host[:port], http or https, with no path (https://shop.example)", s)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", fmt.Errorf("origin %q: no host", s)
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// Allowed reports whether origin (an Origin header's value, as sent) is on the list. A value
// browsers would not send (upper case, a default port, a path) is not.
func (l AllowList) Allowed(origin string) bool {
	_, ok := l.origins[origin]
	return ok
}

// Len is how many origins the list holds.
func (l AllowList) Len() int { return len(l.origins) }
