package handler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// The edge's URL space: where on the shop's site its routes live. The site's routes (the
// Caddyfile's matchers) decide which requests reach a handler; a handler needs the prefix only
// to find the sale's segment in the path and to build the edge's URLs (the pages' client).
// The defaults are the paths the edge has always answered, so existing clients keep working.
const (
	// DefaultPrefix is the path every buyer route of the edge is under: /seckill/{sale}/...
	DefaultPrefix = "/seckill"
	// DefaultOrdersPrefix is the path of the order status route: /orders/{id}.
	DefaultOrdersPrefix = "/orders"
)

// URLSpace is the seckill app's choice of paths, which every handler inherits unless it sets
// its own prefix.
type URLSpace struct {
	Prefix       string // the buyer routes: Prefix/{sale}/token, /buy, /queue, /draw...
	OrdersPrefix string // the order status route: OrdersPrefix/{id}
}

// URLSpacer is what the seckill app offers its handlers (handler cannot import the app).
type URLSpacer interface{ URLSpace() URLSpace }

// WithDefaults is s with the empty paths set to the defaults.
func (s URLSpace) WithDefaults() URLSpace {
	if s.Prefix == "" {
		s.Prefix = DefaultPrefix
	}
	if s.OrdersPrefix == "" {
		s.OrdersPrefix = DefaultOrdersPrefix
	}
	return s
}

// Validate checks both paths with CheckPrefix.
func (s URLSpace) Validate() error {
	if err := CheckPrefix(s.Prefix); err != nil {
		return fmt.Errorf("prefix: %w", err)
	}
	if err := CheckPrefix(s.OrdersPrefix); err != nil {
		return fmt.Errorf("orders_prefix: %w", err)
	}
	return nil
}

// CheckPrefix refuses a path that cannot be a prefix of the edge's routes: it starts with "/",
// has one or more segments, no trailing slash, and each segment is made of the characters a
// path needs no escaping for (A-Z a-z 0-9 - . _ ~), neither "." nor "..". The same path then
// reads the same in a Caddyfile matcher, a placeholder, a URL and a DPoP proof's htu; and no
// placeholder or wildcard hides in it.
func CheckPrefix(p string) error {
	if p == "" || p[0] != '/' || p == "/" || strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q: a path such as /seckill or /shop-api/drop (one or more segments, no trailing slash)", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q: an empty, \".\" or \"..\" segment", p)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
				return fmt.Errorf("%q: %q is not allowed (only A-Z a-z 0-9 - . _ ~ and /)", p, c)
			}
		}
	}
	return nil
}

// Segments is how many path segments prefix has (/seckill: 1, /shop-api/drop: 2).
func Segments(prefix string) int { return strings.Count(prefix, "/") }

// SalePlaceholder is the placeholder of the path segment after prefix, where the routes under
// it carry the sale id: {http.request.uri.path.1} for /seckill.
func SalePlaceholder(prefix string) string {
	return "{http.request.uri.path." + strconv.Itoa(Segments(prefix)) + "}"
}

// InheritURLSpace returns the app's URL space (with the defaults filled in) from ctx: what a
// handler inherits at provision. A config without the app's URL space has the defaults.
func InheritURLSpace(ctx caddy.Context) (URLSpace, error) {
	a, err := ctx.App("seckill")
	if err != nil {
		return URLSpace{}, err
	}
	var s URLSpace
	if sp, ok := a.(URLSpacer); ok {
		s = sp.URLSpace()
	}
	return s.WithDefaults(), nil
}
