package conformance

import (
	"testing"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// A prefix reads the same in a matcher, a placeholder, a URL and a DPoP proof: plain
// segments only, so a typo or a wildcard stops the config at load.
func TestAPrefixIsPlainSegmentsAndPlacesTheSale(t *testing.T) {
	for _, c := range []struct {
		prefix string
		sale   string // the default sale placeholder, "" when refused
	}{
		{"/seckill", "{http.request.uri.path.1}"},
		{"/shop-api/drop", "{http.request.uri.path.2}"},
		{"/a/b.c/d_e~f", "{http.request.uri.path.3}"},
		{"", ""}, {"/", ""}, {"seckill", ""}, {"/seckill/", ""}, {"/a//b", ""}, {"/a/../b", ""}, {"/./a", ""},
		{"/a b", ""}, {"/seckill/*", ""}, {"/{env.X}", ""}, {"/a%2fb", ""}, {"/ä", ""}, {"/a?b", ""},
	} {
		err := handler.CheckPrefix(c.prefix)
		if (err == nil) != (c.sale != "") {
			t.Errorf("CheckPrefix(%q) = %v", c.prefix, err)
			continue
		}
		if c.sale != "" {
			if got := handler.SalePlaceholder(c.prefix); got != c.sale {
				t.Errorf("SalePlaceholder(%q) = %s, want %s", c.prefix, got, c.sale)
			}
			s := handler.Subject{Prefix: c.prefix}
			s.SetDefaults()
			if s.Sale != c.sale {
				t.Errorf("prefix %q: default sale %s, want %s", c.prefix, s.Sale, c.sale)
			}
		}
	}
	var s handler.Subject
	s.SetDefaults()
	if s.Prefix != "/seckill" || s.Sale != handler.DefaultSale {
		t.Errorf("the defaults: %+v, want /seckill and %s", s, handler.DefaultSale)
	}
	if sp := (handler.URLSpace{}).WithDefaults(); sp != (handler.URLSpace{Prefix: "/seckill", OrdersPrefix: "/orders"}) || sp.Validate() != nil {
		t.Errorf("the default URL space: %+v", sp)
	}
	if err := (handler.URLSpace{Prefix: "/shop", OrdersPrefix: "/orders/"}).Validate(); err == nil {
		t.Error("an orders_prefix with a trailing slash passed")
	}
}
