package core

import (
	"errors"
	"strings"
	"testing"
)

// An allow list matches an Origin exactly as browsers send it; "*", wildcards, "null" and
// anything that is not scheme://host[:port] never load.
func TestTheAllowListMatchesOnlyTheListedOriginsExactly(t *testing.T) {
	l, err := NewAllowList([]string{"https://Shop.Example", "http://127.0.0.1:3000", "https://shop.example:443", "http://[::1]:8080", "https://m.shop.example:8443"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 4 {
		t.Errorf("%d origins, want 4 (the default port is the same origin)", l.Len())
	}
	for origin, want := range map[string]bool{
		"https://shop.example":          true,
		"http://127.0.0.1:3000":         true,
		"http://[::1]:8080":             true,
		"https://m.shop.example:8443":   true,
		"http://shop.example":           false, // another scheme is another origin
		"https://shop.example:8443":     false,
		"https://evil.shop.example":     false, // a sibling subdomain
		"https://shop.example.evil.com": false,
		"https://shop.example/":         false,
		"https://SHOP.example":          false, // browsers send lower case
		"http://127.0.0.1:3001":         false,
		"http://127.0.0.1":              false,
		"null":                          false,
		"":                              false,
		"*":                             false,
	} {
		if got := l.Allowed(origin); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", origin, got, want)
		}
	}
}

func TestABadOriginIsRefusedWithWhatAnOriginIs(t *testing.T) {
	if _, err := NewAllowList([]string{"https://shop.example", "*"}); !errors.Is(err, ErrWildcard) {
		t.Errorf(`"*": %v, want ErrWildcard`, err)
	}
	for _, bad := range []string{"https://*.shop.example", "null", "shop.example", "https://shop.example/path",
		"https://shop.example/", "ftp://shop.example", "https://user@shop.example", "https://shop.example?x", "https://", "//shop.example", ""} {
		_, err := ParseOrigin(bad)
		if err == nil {
			t.Errorf("ParseOrigin(%q) passed", bad)
			continue
		}
		if !strings.Contains(err.Error(), "origin") && !strings.Contains(err.Error(), "wildcard") {
			t.Errorf("ParseOrigin(%q): %v does not say what an origin is", bad, err)
		}
	}
	for in, want := range map[string]string{"HTTPS://SHOP.EXAMPLE": "https://shop.example", "http://a.example:80": "http://a.example",
		"https://a.example:8443": "https://a.example:8443", "http://[::1]:3000": "http://[::1]:3000"} {
		if got, err := ParseOrigin(in); err != nil || got != want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
