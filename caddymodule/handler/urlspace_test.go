package handler

import "testing"

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
		err := CheckPrefix(c.prefix)
		if (err == nil) != (c.sale != "") {
			t.Errorf("CheckPrefix(%q) = %v", c.prefix, err)
			continue
		}
		if c.sale != "" {
			if got := SalePlaceholder(c.prefix); got != c.sale {
				t.Errorf("SalePlaceholder(%q) = %s, want %s", c.prefix, got, c.sale)
			}
			s := Subject{Prefix: c.prefix}
			s.SetDefaults()
			if s.Sale != c.sale {
				t.Errorf("prefix %q: default sale %s, want %s", c.prefix, s.Sale, c.sale)
			}
		}
	}
	var s Subject
	s.SetDefaults()
	if s.Prefix != "/seckill" || s.Sale != DefaultSale {
		t.Errorf("the defaults: %+v, want /seckill and %s", s, DefaultSale)
	}
	if sp := (URLSpace{}).WithDefaults(); sp != (URLSpace{"/seckill", "/orders"}) || sp.Validate() != nil {
		t.Errorf("the default URL space: %+v", sp)
	}
	if err := (URLSpace{"/shop", "/orders/"}).Validate(); err == nil {
		t.Error("an orders_prefix with a trailing slash passed")
	}
}
